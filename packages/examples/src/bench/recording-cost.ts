/**
 * `npm run bench:recording`: what distributed autograd's recording costs in
 * one process. An 8-layer MLP (`relu(h @ w)` per layer, batch 16, 16 ops)
 * for two hidden sizes: the forward outside any context, the same forward
 * inside an open context (its ops recorded), `backward()` from a local root,
 * and `tf.variableGrads` of the same forward (TensorFlow.js's own tape and
 * backward) for comparison; then an `rpcSync` of a 4-element tensor between
 * two agents of the local transport outside a context and inside one, and a
 * whole context that made one such call (open, call, exit and the release
 * sent to the callee). Each figure is the median of `--rounds` rounds, each
 * the mean of `--reps` repetitions, after a warm-up of its own.
 *
 * With `--doc`, the tables are written into that doc (docs/dist-autograd.md)
 * between its markers.
 *
 *   npm run bench:recording -- [--rounds 7] [--reps 200] [--doc docs/dist-autograd.md]
 * @module
 */
import { localTransport, tensorBackend, tf } from '@tensorbus/core';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import { availableParallelism, loadavg } from 'node:os';
import { flagReader } from '../common/args.js';
import { commandLine, generatedMarkers, replaceGeneratedPart } from './report/generated-part.js';
import { median } from './stats.js';
import { identity } from './systems/tensorbus-functions.js';

const value = flagReader(process.argv.slice(2));
const rounds = Number(value('--rounds', '7'));
const reps = Number(value('--reps', '200'));
const doc = value('--doc', '');
/** Each figure's warm-up: V8 compiles the call and autograd paths in tiers, over some thousands of runs. */
const WARMUP_MS = 3000;
const WARMUP_MAX_RUNS = 6000;
const LAYERS = 8;
/** Calls made in one context for the "inside a context" row. */
const CALLS_PER_CONTEXT = 10;
const BATCH = 16;
const HIDDEN_SIZES = [64, 256];
const loadAtStart = loadavg()[0]!;

/** Median over rounds of the mean µs of `fn` over `reps` runs, after a warm-up of its own. */
async function timed(fn: () => Promise<number | void> | number | void): Promise<number> {
  const warmUntil = performance.now() + WARMUP_MS;
  for (let i = 0; i < WARMUP_MAX_RUNS && performance.now() < warmUntil; i++) await fn();
  const means: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let total = 0;
    for (let i = 0; i < reps; i++) {
      const started = performance.now();
      const inner = await fn();
      // A step that times its own part returns it (µs); otherwise the whole call counts.
      total += typeof inner === 'number' ? inner : (performance.now() - started) * 1000;
    }
    means.push(total / reps);
  }
  return median(means);
}

/** µs since `started` (a `performance.now()`). */
const since = (started: number) => (performance.now() - started) * 1000;

/** The MLP's rows for hidden size `h`, measured on agent `agent` (whose contexts record the ops). */
async function mlpRow(agent: RpcAgent, h: number): Promise<string> {
  const weights = Array.from({ length: LAYERS }, (_, i) => tf.variable(tf.randomNormal([h, h], 0, 0.1, 'float32', i + 1)));
  const x = tf.randomNormal([BATCH, h], 0, 1, 'float32', 99);
  const forward = () => weights.reduce((a: tf.Tensor, w) => tf.relu(tf.matMul(a, w)), x);
  const plain = await timed(() => tf.tidy(() => void forward()));
  const recorded = await timed(() =>
    agent.distAutograd.context(() => {
      const started = performance.now();
      tf.tidy(() => void forward());
      return since(started);
    }),
  );
  const backward = await timed(() =>
    agent.distAutograd.context(async (ctx) => {
      const loss = tf.tidy(() => tf.mean(forward()));
      const started = performance.now();
      await agent.distAutograd.backward(ctx, [loss]);
      const took = since(started);
      loss.dispose();
      return took;
    }),
  );
  const variableGrads = await timed(() => {
    const { value, grads } = tf.variableGrads(() => tf.mean(forward()));
    tf.dispose([value, ...Object.values(grads)]);
  });
  tf.dispose([x, ...weights]);
  console.log(`H = ${h}: forward ${plain.toFixed(0)} µs, recorded ${recorded.toFixed(0)} µs, backward ${backward.toFixed(0)} µs, tf.variableGrads ${variableGrads.toFixed(0)} µs`);
  return `| ${h} | ${plain.toFixed(0)} | ${recorded.toFixed(0)} | ${backward.toFixed(0)} | ${variableGrads.toFixed(0)} |`;
}

/** The call rows: a 4-element tensor's rpcSync outside and inside a context, and a whole context with one call. */
async function callRows(caller: RpcAgent): Promise<string[]> {
  const x = tf.ones([4]);
  const call = async () => tf.dispose(await caller.rpcSync('callee', identity, [x]));
  const outside = await timed(call);
  // Each round's calls in one context, as the calls of a training step: the mean per call.
  const inside = await timed(async () => {
    let perCall = 0;
    await caller.distAutograd.context(async () => {
      const started = performance.now();
      for (let i = 0; i < CALLS_PER_CONTEXT; i++) await call();
      perCall = since(started) / CALLS_PER_CONTEXT;
    });
    return perCall;
  });
  const wholeContext = await timed(() => caller.distAutograd.context(call));
  x.dispose();
  console.log(`rpcSync of 4 floats: ${outside.toFixed(1)} µs outside a context, ${inside.toFixed(1)} µs per call inside one; a context with one call ${wholeContext.toFixed(1)} µs`);
  return [
    `| \`rpcSync\` of a 4-element tensor, outside any context | ${outside.toFixed(1)} |`,
    `| the same call inside an open context, per call of ${CALLS_PER_CONTEXT} made in one (tagging, the tensors walked and recorded both ways) | ${inside.toFixed(1)} |`,
    `| a whole context with that one call: open, call, exit (the release goes to the callee after) | ${wholeContext.toFixed(1)} |`,
  ];
}

const transport = localTransport({ bus: `recording-cost-${process.pid}` });
const [caller, callee] = await Promise.all(['caller', 'callee'].map((name) => initRpc({ name, transport })));
console.log(`recording cost: ${rounds} rounds of ${reps}, each figure after ${WARMUP_MS / 1000} s (at most ${WARMUP_MAX_RUNS} runs) of warm-up; TensorFlow.js backend ${tensorBackend()}; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
const mlpRows: string[] = [];
for (const h of HIDDEN_SIZES) mlpRows.push(await mlpRow(caller!, h));
const calls = await callRows(caller!);
await Promise.all([caller!.shutdown({ graceful: false }), callee!.shutdown({ graceful: false })]);
if (doc) {
  const date = new Date().toISOString();
  const body = [
    `\`${commandLine('bench:recording', process.argv.slice(2))}\`, ${date.slice(0, 10)} ${date.slice(11, 16)} UTC, TensorFlow.js on \`${tensorBackend()}\`: medians of ${rounds} rounds, each the mean of ${reps} repetitions, after ${WARMUP_MS / 1000} s (at most ${WARMUP_MAX_RUNS} runs) of warm-up; 1-minute load average ${loadAtStart.toFixed(2)} at the start, ${loadavg()[0]!.toFixed(2)} at the end (${availableParallelism()} cores).`,
    '',
    `An ${LAYERS}-layer MLP, \`relu(h @ w)\` per layer, batch ${BATCH}: ${2 * LAYERS} ops, and a mean for the loss in the last two columns; H = hidden size; µs:`,
    '',
    '| H | forward, no context | forward inside a context (recording) | `backward()` from a local root | `tf.variableGrads` of the same forward (tape + backward) |',
    '| ---: | ---: | ---: | ---: | ---: |',
    ...mlpRows,
    '',
    'Calls between two agents of the local transport, µs:',
    '',
    '| | µs |',
    '| --- | ---: |',
    ...calls,
  ].join('\n');
  const markers = generatedMarkers('npm run bench:recording', 'packages/examples/src/bench/recording-cost.ts');
  console.log(replaceGeneratedPart(doc, markers, body) ?? `${doc}: recording cost tables rewritten from this run`);
}
