/**
 * `npm run bench:browser`: round trips between a page (headless Chromium,
 * the transport's browser build over NATS WebSocket) and a Node worker, both
 * ways, beside Node to Node through the bus (TCP, direct plane off) and with
 * the direct plane (the default), in one run on one nats-server. No-op (8
 * bytes) and 4 MB requests answered with what they carried; medians in ms.
 *
 *   npm run bench:browser -- [--calls 200] [--big-calls 10]
 * @module
 */
import { fileURLToPath } from 'node:url';
import { loadavg } from 'node:os';
import type { Transport } from '@tensorbus/core';
import { natsTransport, startNatsServer } from '@tensorbus/nats-transport';
import { openPage, servePage } from '@tensorbus/nats-transport/testing/browser';
import { flagReader } from '../common/args.js';
import { median } from './stats.js';

const value = flagReader(process.argv.slice(2));
const calls = Number(value('--calls', '200'));
const bigCalls = Number(value('--big-calls', '10'));
const SIZES = [
  { label: 'no-op (8 B)', bytes: 8, calls, warmup: 20 },
  { label: '4 MB', bytes: 4 * 1024 * 1024, calls: bigCalls, warmup: 2 },
];
const namespace = `browserbench${process.pid}`;

/** Milliseconds of each of `n` sequential requests of `bytes` from `from` to `subject`, after `warmup`. */
async function time(from: Transport, subject: string, bytes: number, warmup: number, n: number): Promise<number[]> {
  const data = new Uint8Array(bytes);
  for (let i = 0; i < warmup; i++) await from.request(subject, data, { timeoutMs: 60_000 });
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await from.request(subject, data, { timeoutMs: 60_000 });
    samples.push(performance.now() - started);
  }
  return samples;
}

const server = await startNatsServer({ websocket: { quiet: true } });
const served = await servePage(fileURLToPath(new URL('./browser/page.js', import.meta.url)), 'tensorbus bench:browser');
const tab = await openPage(served.url);
const transports: Transport[] = [];
try {
  await tab.page.waitForFunction('window.benchReady === true');
  await tab.evaluate(`bench.start(${JSON.stringify(server.wsUrl)}, ${JSON.stringify(namespace)})`);
  const responder = await natsTransport({ servers: server.url, namespace, direct: false });
  const busCaller = await natsTransport({ servers: server.url, namespace, direct: false });
  const directResponder = await natsTransport({ servers: server.url, namespace });
  const directCaller = await natsTransport({ servers: server.url, namespace });
  transports.push(responder, busCaller, directResponder, directCaller);
  responder.subscribe('node.echo', (message) => message.respond(message.data.bytes.slice()));
  directResponder.subscribe('direct.echo', (message) => message.respond(message.data.bytes.slice()), { exclusive: true });
  await Promise.all(transports.map((t) => t.flush()));
  console.log(`round trips, median ms; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  console.log('| round trip | page → Node | Node → page | Node → Node, bus | Node → Node, direct plane |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const size of SIZES) {
    const fromTab = await tab.evaluate<number[]>(`bench.time(${size.bytes}, ${size.warmup}, ${size.calls})`);
    const toTab = await time(busCaller, 'tab.echo', size.bytes, size.warmup, size.calls);
    const bus = await time(busCaller, 'node.echo', size.bytes, size.warmup, size.calls);
    const direct = await time(directCaller, 'direct.echo', size.bytes, size.warmup, size.calls);
    const cells = [fromTab, toTab, bus, direct].map((samples) => median(samples).toFixed(2));
    console.log(`| ${size.label} | ${cells.join(' | ')} |`);
  }
} finally {
  await Promise.all(transports.map((t) => t.close()));
  await tab.close();
  await served.close();
  await server.stop();
}
