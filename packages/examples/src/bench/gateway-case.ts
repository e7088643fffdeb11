/**
 * The gateway case of the benchmark: the latency of a small call
 * (`bench.echo(i)`, an integer there and back) to a worker process, made
 * directly by a tensorbus caller and through the XML-RPC gateway (a process
 * of its own, `tensorbus gateway`) by a Node HTTP client with a kept-alive
 * connection and by Python's xmlrpc.client. Blocks of the three alternate,
 * round after round, so load from elsewhere on a shared machine falls on all
 * of them alike; the medians over all rounds are printed with the load.
 * Writes `gateway.json` to `--out` (default out/bench) and, with `--doc`, the
 * latency part of that doc (docs/gateway.md) between its markers.
 *
 *   npm run bench:gateway -- [--rounds 5] [--calls 400] [--out dir] [--doc docs/gateway.md]
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { natsTransport, startNatsServer } from '@tensorbus/nats-transport';
import { initRpc } from '@tensorbus/actors';
import { flagReader } from '../common/args.js';
import { commandLine, generatedMarkers, replaceGeneratedPart } from './report/generated-part.js';
import { formatTime } from './report/format.js';
import { median, quantile, timeCalls } from './stats.js';
import { echo } from './systems/tensorbus-functions.js';

const argv = process.argv.slice(2);
const flag = flagReader(argv);
const ROUNDS = Number(flag('--rounds', '5'));
const CALLS = Number(flag('--calls', '400'));
const WARMUP = 300;
const out = flag('--out', 'out/bench');
const doc = flag('--doc', '');
/** The markers of docs/gateway.md's latency table. */
const GATEWAY_DOC_MARKERS = generatedMarkers('npm run bench:gateway', 'packages/examples/src/bench/gateway-case.ts');

const cli = fileURLToPath(new URL('../../../../actors/dist/src/cli/main.js', import.meta.url));
const callee = fileURLToPath(new URL('./systems/gateway-callee.js', import.meta.url));
const pyClient = fileURLToPath(new URL('../../../src/bench/gateway_client.py', import.meta.url));

const children: ChildProcess[] = [];
/** Spawns `args`, resolves with the first stdout line matching `ready`. */
function start(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<string> {
  const child = spawn(command, args, { env: { ...process.env, TENSORBUS_QUIET: '1', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => ready.test(line) && resolve(line));
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

const nats = await startNatsServer();
try {
  await start(process.execPath, [callee], { NATS_URL: nats.url }, /^ready/);
  const url = await start(process.execPath, [cli, 'gateway', '--port', '0', '--server', nats.url, '--name', 'gateway-bench'], {}, /^http:/);
  const agent = await initRpc({ name: 'driver', transport: natsTransport({ servers: nats.url }), logger: null });
  const http = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = (i: number) =>
    new Promise<string>((resolve, reject) => {
      const body = `<?xml version="1.0"?><methodCall><methodName>callee.bench.echo</methodName><params><param><value><int>${i}</int></value></param></params></methodCall>`;
      const req = request(url, { method: 'POST', agent: http, headers: { 'content-type': 'text/xml', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => (text.includes(`<int>${i}</int>`) ? resolve(text) : reject(new Error(text))));
      });
      req.on('error', reject);
      req.end(body);
    });
  // Each call gets a number of its own (the gateway's answer must echo it); samples in µs.
  let next = 0;
  const timed = async (n: number, call: (i: number) => Promise<unknown>): Promise<number[]> =>
    (await timeCalls(() => call(next++), { warmup: 0, reps: n })).samplesMs.map((ms) => ms * 1000);
  const direct = (i: number) => agent.rpcSync('callee', echo, [i]);
  await timed(WARMUP, direct);
  await timed(WARMUP, post);
  const samples: Record<'direct' | 'gateway-node' | 'gateway-python', number[]> = { direct: [], 'gateway-node': [], 'gateway-python': [] };
  const rounds: Array<Record<string, number>> = [];
  const load = [loadavg()[0]!];
  for (let r = 0; r < ROUNDS; r++) {
    const d = await timed(CALLS, direct);
    const g = await timed(CALLS, post);
    const p = await new Promise<number[]>((resolve, reject) => {
      const py = spawn('python3', [pyClient, url, String(CALLS), r === 0 ? String(WARMUP) : '50'], { stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      py.stdout.on('data', (c: Buffer) => (text += c));
      py.once('exit', (code) => (code === 0 ? resolve(JSON.parse(text) as number[]) : reject(new Error(`python exited with ${code}`))));
    });
    samples.direct.push(...d);
    samples['gateway-node'].push(...g);
    samples['gateway-python'].push(...p);
    rounds.push({ direct: median(d), 'gateway-node': median(g), 'gateway-python': median(p) });
    console.log(`round ${r + 1}: median µs direct ${median(d).toFixed(0)}, gateway (node http) ${median(g).toFixed(0)}, gateway (python xmlrpc.client) ${median(p).toFixed(0)}`);
  }
  load.push(loadavg()[0]!);
  const summary = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, { medianUs: median(v), p90Us: quantile(v, 0.9), calls: v.length }]));
  console.log(`over ${ROUNDS} rounds of ${CALLS} calls each, load ${load.map((l) => l.toFixed(2)).join(' -> ')}:`);
  for (const [k, v] of Object.entries(summary)) console.log(`  ${k.padEnd(15)} median ${v.medianUs.toFixed(0)} µs, p90 ${v.p90Us.toFixed(0)} µs`);
  mkdirSync(out, { recursive: true });
  const date = new Date().toISOString();
  writeFileSync(join(out, 'gateway.json'), `${JSON.stringify({ date, rounds, summary, loadAvg1m: load }, null, 2)}\n`);
  if (doc) {
    const us = (v: number) => formatTime(v / 1000);
    const table = [
      `\`${commandLine('bench:gateway', argv)}\`, ${date.slice(0, 10)} ${date.slice(11, 16)} UTC: ${ROUNDS} rounds of ${CALLS} calls of each kind after ${WARMUP} warm-up calls; 1-minute load average ${load.map((l) => l.toFixed(2)).join(' at the start, ')} at the end (${availableParallelism()} cores).`,
      '',
      '| round | direct (tensorbus caller) | gateway, Node HTTP client | gateway, Python xmlrpc.client |',
      '| --- | ---: | ---: | ---: |',
      ...rounds.map((r, i) => `| ${i + 1} | ${us(r.direct!)} | ${us(r['gateway-node']!)} | ${us(r['gateway-python']!)} |`),
      `| **median of all ${summary.direct!.calls}** | **${us(summary.direct!.medianUs)}** (p90 ${us(summary.direct!.p90Us)}) | **${us(summary['gateway-node']!.medianUs)}** (p90 ${us(summary['gateway-node']!.p90Us)}) | **${us(summary['gateway-python']!.medianUs)}** (p90 ${us(summary['gateway-python']!.p90Us)}) |`,
    ].join('\n');
    const refused = replaceGeneratedPart(doc, GATEWAY_DOC_MARKERS, table);
    console.log(refused ?? `${doc}: latency table rewritten from this run`);
  }
  await agent.shutdown({ graceful: false });
  http.destroy();
} finally {
  for (const child of children) child.kill('SIGTERM');
  await nats.stop();
}
process.exit(0);
