/**
 * The page of `npm run bench:browser` (bundled for the browser by the bench):
 * the browser build of the transport, serving `tab.echo` and timing its own
 * requests to a Node responder through `window.bench`.
 */
import { natsTransport } from '@tensorbus/nats-transport';
import type { Transport } from '@tensorbus/core';

let transport: Transport | undefined;

const bench = {
  /** Connects over WebSocket and serves `tab.echo` (answers with what it got). */
  async start(servers: string, namespace: string): Promise<void> {
    transport = await natsTransport({ servers, namespace, name: 'bench tab' });
    transport.subscribe('tab.echo', (message) => message.respond(message.data.bytes.slice()));
    await transport.flush();
  },
  /** Milliseconds of each of `calls` sequential requests of `size` bytes to `node.echo`, after `warmup` untimed ones. */
  async time(size: number, warmup: number, calls: number): Promise<number[]> {
    const data = new Uint8Array(size);
    for (let i = 0; i < warmup; i++) await transport!.request('node.echo', data, { timeoutMs: 60_000 });
    const samples: number[] = [];
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      await transport!.request('node.echo', data, { timeoutMs: 60_000 });
      samples.push(performance.now() - started);
    }
    return samples;
  },
};

Object.assign(window, { bench, benchReady: true });
