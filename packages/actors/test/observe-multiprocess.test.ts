/**
 * Traces across real OS processes on a real nats-server: each process
 * exports to its own in-memory exporter; the test gathers the spans and
 * checks that a nested call and a distributed backward pass are each one
 * tree spanning the processes (parent/child links and attributes).
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { SpanKind } from '@opentelemetry/api';
import { tf } from '@tensorbus/core';
import { exporter, finishedSpans, spanRecords, type SpanRecord } from './fixtures/observe-tracing.js';
import { chain, stopProcess } from './fixtures/autograd-functions.js';
import { relay } from './fixtures/observe-functions.js';
import { startProcessGroup, stopProcessGroups, type ProcessGroup } from './process-group.js';
import { variable } from './autograd-helpers.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/observe-worker.js', import.meta.url));

/** Every span finished in the group's processes, p0's included. */
async function allSpans({ agent }: ProcessGroup, peers: string[]): Promise<SpanRecord[]> {
  const remote = await Promise.all(peers.map((p) => agent.rpcSync(p, finishedSpans, []) as Promise<SpanRecord[]>));
  return [...spanRecords(), ...remote.flat()];
}

async function stopGroup({ agent, children }: ProcessGroup): Promise<void> {
  await Promise.all(['p1', 'p2'].map((name) => agent.rpcSync(name, stopProcess, []).catch(() => undefined)));
  await agent.shutdown({ timeoutMs: 10_000 }).catch(() => undefined);
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
}

/** Checks that `spans` form one tree under `root`: every other span's parent is in it. */
function assertTree(t: import('ava').ExecutionContext, spans: SpanRecord[], root: SpanRecord): void {
  const ids = new Set(spans.map((s) => s.spanId));
  for (const span of spans) {
    if (span === root) continue;
    t.true(span.parentSpanId !== undefined && ids.has(span.parentSpanId), `${span.name} on ${String(span.attributes['tensorbus.worker'])} has its parent in the trace`);
  }
}

test.serial('nats processes - observe - a nested call p0 → p1 → p2 is one trace across three processes', async (t) => {
  const g = await startProcessGroup(workerScript, 3);
  exporter.reset();
  t.is(await g.agent.rpcSync('p1', relay, ['p2', 'across']), 'across');
  const spans = await allSpans(g, ['p1', 'p2']);
  const root = spans.find((s) => s.kind === SpanKind.CLIENT && s.attributes['rpc.method'] === 'obs.relay')!;
  t.truthy(root, "p0's client span");
  const tree = spans.filter((s) => s.traceId === root.traceId);
  t.is(tree.length, 4, tree.map((s) => `${s.name}@${String(s.attributes['tensorbus.worker'])}`).join(', '));
  assertTree(t, tree, root);
  t.is(root.parentSpanId, undefined);
  t.is(new Set(tree.map((s) => s.pid)).size, 3, 'spans from three processes');
  const served = (worker: string) => tree.find((s) => s.kind === SpanKind.SERVER && s.attributes['tensorbus.worker'] === worker)!;
  const nested = tree.find((s) => s.kind === SpanKind.CLIENT && s.attributes['tensorbus.worker'] === 'p1')!;
  t.is(served('p1').parentSpanId, root.spanId);
  t.is(nested.parentSpanId, served('p1').spanId);
  t.is(served('p2').parentSpanId, nested.spanId);
  t.is(served('p2').attributes['tensorbus.peer'], 'p1');
  t.is(served('p2').attributes['rpc.method'], 'test.echo');
  for (const s of tree) t.is(s.attributes['tensorbus.outcome'], 'OK');
  await stopGroup(g);
});

test.serial('nats processes - observe - a distributed backward 0→1→2→0 is one span tree: the gradients sent to each process are its children', async (t) => {
  const g = await startProcessGroup(workerScript, 3);
  const { agent } = g;
  const x = variable([6], 1);
  const w = variable([6], 2);
  exporter.reset();
  let contextId = '';
  await agent.distAutograd.context(async (ctxId) => {
    contextId = String(ctxId);
    const y = await agent.rpcSync('p1', chain, [['p2', 'p0', 'p1'], x, w]);
    const loss = tf.sum(y);
    await agent.distAutograd.backward(ctxId, [loss]);
    tf.dispose([y, loss]);
  });
  const spans = await allSpans(g, ['p1', 'p2']);
  const backward = spans.find((s) => s.name === 'autograd backward')!;
  t.truthy(backward, 'the backward pass is a span');
  t.is(backward.attributes['tensorbus.worker'], 'p0');
  t.is(backward.attributes['tensorbus.autograd.context'], contextId);
  t.is(backward.attributes['tensorbus.outcome'], 'OK');
  const tree = spans.filter((s) => s.traceId === backward.traceId);
  assertTree(t, tree, backward);
  const servedOn = (worker: string) => tree.filter((s) => s.kind === SpanKind.SERVER && s.attributes['tensorbus.worker'] === worker);
  t.true(servedOn('p1').length > 0 && servedOn('p2').length > 0, `the pass reached p1 and p2: ${tree.map((s) => `${s.name}@${String(s.attributes['tensorbus.worker'])}`).join(', ')}`);
  for (const s of tree.filter((s) => s.kind !== SpanKind.INTERNAL)) {
    t.true(String(s.attributes['rpc.method']).startsWith('tb.'), `${s.name}: a protocol call of the pass`);
    t.is(s.attributes['tensorbus.outcome'], 'OK');
  }
  t.true(new Set(tree.map((s) => s.pid)).size >= 3, 'spans from the three processes');
  tf.dispose([x, w]);
  await stopGroup(g);
});
