/**
 * `npm run bench:tracing`: the cost of observing calls. The no-op round trip
 * with tracing off (no OpenTelemetry provider registered: the call path
 * reads one boolean) and with an in-memory span exporter on, side by side,
 * in process and over NATS. The two modes alternate round by round in the
 * same process (the machine's noise hits both alike); medians of the rounds
 * are reported.
 *
 * With `--doc`, the table is written into that doc (docs/observability.md)
 * between its markers.
 *
 *   npm run bench:tracing -- [--rounds 7] [--calls 3000] [--doc docs/observability.md]
 * @module
 */
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { localTransport, type Transport } from '@tensorbus/core';
import { initRpc, refreshObservability, type RpcAgent } from '@tensorbus/actors';
import { natsTransport, startNatsServer } from '@tensorbus/nats-transport';
import { availableParallelism, loadavg } from 'node:os';
import { flagReader } from '../common/args.js';
import { commandLine, generatedMarkers, replaceGeneratedPart } from './report/generated-part.js';
import { median } from './stats.js';
import { noop } from './systems/tensorbus-functions.js';

const value = flagReader(process.argv.slice(2));
const rounds = Number(value('--rounds', '7'));
const calls = Number(value('--calls', '3000'));
const doc = value('--doc', '');
const WARMUP = 300;
const loadAtStart = loadavg()[0]!;

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

/** Turns tracing on (an in-memory exporter) or off (no provider at all). */
function tracing(on: boolean): void {
  trace.disable();
  if (on) trace.setGlobalTracerProvider(provider);
  refreshObservability();
}

/** Mean µs per sequential no-op call over `n` calls. */
async function measure(caller: RpcAgent, n: number): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await caller.rpcSync('callee', noop, []);
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await caller.rpcSync('callee', noop, []);
  return Number(process.hrtime.bigint() - started) / 1000 / n;
}

const server = await startNatsServer();
const kinds: Array<{ name: string; transport: (namespace: string) => Transport | Promise<Transport> }> = [
  { name: 'in-process', transport: () => localTransport({ bus: `tracing-cost-${process.pid}` }) },
  { name: 'NATS (same host)', transport: (namespace) => natsTransport({ servers: server.url, namespace }) },
];
console.log(`no-op round trip, tracing off vs an in-memory exporter on: ${rounds} interleaved rounds of ${calls} calls; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const rows: string[] = [];
for (const [k, kind] of kinds.entries()) {
  const namespace = `tracing${process.pid}x${k}`;
  const [caller, callee] = await Promise.all(['caller', 'callee'].map(async (name) => initRpc({ name, transport: kind.transport(namespace) })));
  const off: number[] = [];
  const on: number[] = [];
  for (let r = 0; r < rounds; r++) {
    // Alternating which mode goes first, so neither always follows the other.
    for (const mode of r % 2 === 0 ? [false, true] : [true, false]) {
      tracing(mode);
      (mode ? on : off).push(await measure(caller!, calls));
      exporter.reset();
    }
  }
  tracing(false);
  const [a, b] = [median(off), median(on)];
  rows.push(`| ${kind.name} | ${a.toFixed(1)} | ${b.toFixed(1)} | ${(b / a).toFixed(2)}x |`);
  console.log(`${kind.name}: off ${off.map((x) => x.toFixed(1)).join(' ')} µs; on ${on.map((x) => x.toFixed(1)).join(' ')} µs`);
  await Promise.all([caller!.shutdown({ graceful: false }), callee!.shutdown({ graceful: false })]);
}
console.log('\n| transport | tracing off, µs | in-memory exporter on, µs | on / off |\n|---|---|---|---|');
for (const row of rows) console.log(row);
console.log(`load after: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
if (doc) {
  const date = new Date().toISOString();
  const body = [
    `\`${commandLine('bench:tracing', process.argv.slice(2))}\`, ${date.slice(0, 10)} ${date.slice(11, 16)} UTC: ${rounds} rounds of ${calls} calls in each mode, medians of the rounds; 1-minute load average ${loadAtStart.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end (${availableParallelism()} cores).`,
    '',
    '| transport | tracing off, µs | in-memory exporter on, µs | on / off |',
    '| --- | ---: | ---: | ---: |',
    ...rows,
  ].join('\n');
  const markers = generatedMarkers('npm run bench:tracing', 'packages/examples/src/bench/tracing-cost.ts');
  console.log(replaceGeneratedPart(doc, markers, body) ?? `${doc}: cost table rewritten from this run`);
}
await server.stop();
