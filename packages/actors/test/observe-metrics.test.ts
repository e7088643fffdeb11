/**
 * OpenTelemetry metrics over every transport, read through an SDK metric
 * reader: calls and errors by function and code, latency, bytes, and the
 * gauges read on collection (in-flight calls, RRefs, autograd contexts,
 * tensors).
 */
import test from 'ava';
import { metrics } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type DataPoint, type Histogram, type ResourceMetrics } from '@opentelemetry/sdk-metrics';
import { RemoteError, tensorBackend, tf } from '@tensorbus/core';
import { refreshObservability } from '../src/index.js';
import { Counter, echo, fail, sleep } from './fixtures/functions.js';
import { startGroup, stopEverything, transportKinds } from './helpers.js';

/** A reader collected on demand. */
class TestReader extends MetricReader {
  protected async onShutdown(): Promise<void> {}
  protected async onForceFlush(): Promise<void> {}
}

const reader = new TestReader();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
refreshObservability();

test.after.always(stopEverything);

/** The data points of metric `name` whose attributes include `match`. */
async function points(name: string, match: Record<string, unknown>): Promise<Array<DataPoint<unknown>>> {
  const { resourceMetrics } = (await reader.collect()) as { resourceMetrics: ResourceMetrics };
  const found = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).filter((m) => m.descriptor.name === name);
  return found.flatMap((m) => m.dataPoints as Array<DataPoint<unknown>>).filter((p) => Object.entries(match).every(([k, v]) => p.attributes[k] === v));
}

const sum = async (name: string, match: Record<string, unknown>) => (await points(name, match)).reduce((n, p) => n + (p.value as number), 0);

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - observe - ${title}`;
  const [A, B] = [`ma${kind.name}`, `mb${kind.name}`];

  test.serial(t('metrics count calls and errors by function and code, with latency and bytes'), async (tt) => {
    const [a] = await startGroup(kind, [A, B]);
    for (let i = 0; i < 3; i++) await a!.rpcSync(B, echo, ['x'.repeat(100)]);
    await tt.throwsAsync(a!.rpcSync(B, fail, ['counted']), { instanceOf: RemoteError });
    tt.is(await sum('tensorbus.rpc.client.calls', { 'tensorbus.worker': A, 'rpc.method': 'test.echo', 'tensorbus.outcome': 'OK' }), 3);
    tt.is(await sum('tensorbus.rpc.server.calls', { 'tensorbus.worker': B, 'rpc.method': 'test.echo', 'tensorbus.outcome': 'OK' }), 3);
    tt.is(await sum('tensorbus.rpc.client.errors', { 'tensorbus.worker': A, 'rpc.method': 'test.fail', 'tensorbus.outcome': 'REMOTE_ERROR' }), 1);
    tt.is(await sum('tensorbus.rpc.server.errors', { 'tensorbus.worker': B, 'rpc.method': 'test.fail', 'tensorbus.outcome': 'REMOTE_ERROR' }), 1);
    tt.is(await sum('tensorbus.rpc.client.errors', { 'tensorbus.worker': A, 'rpc.method': 'test.echo' }), 0);
    const [latency] = await points('tensorbus.rpc.client.duration', { 'tensorbus.worker': A, 'rpc.method': 'test.echo' });
    tt.is((latency!.value as Histogram).count, 3);
    tt.true(((latency!.value as Histogram).sum ?? 0) > 0);
    tt.true((await sum('tensorbus.rpc.client.sent_bytes', { 'tensorbus.worker': A, 'rpc.method': 'test.echo' })) >= 300, '3 requests of 100+ bytes');
    tt.true((await sum('tensorbus.rpc.server.received_bytes', { 'tensorbus.worker': B, 'rpc.method': 'test.echo' })) >= 300);
    tt.true((await sum('tensorbus.rpc.client.received_bytes', { 'tensorbus.worker': A, 'rpc.method': 'test.echo' })) >= 300);
  });

  test.serial(t('metric gauges read on collection: in-flight calls, RRefs owned and used, autograd contexts, tensors'), async (tt) => {
    const [a] = await startGroup(kind, [`${A}g`, `${B}g`]);
    const counter = a!.remote(`${B}g`, Counter, [0]);
    await counter.toHere();
    const slow = a!.rpcSync(`${B}g`, sleep, [3_000]);
    // Read until the call is under way on both sides (it sleeps long enough for a loaded machine).
    let inFlight = [0, 0];
    for (let i = 0; i < 50 && !(inFlight[0]! >= 1 && inFlight[1]! >= 1); i++) {
      inFlight = [await sum('tensorbus.rpc.in_flight', { 'tensorbus.worker': `${A}g` }), await sum('tensorbus.rpc.in_flight', { 'tensorbus.worker': `${B}g` })];
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    tt.true(inFlight[0]! >= 1 && inFlight[1]! >= 1, `a call under way on the caller, and being served on the callee: ${inFlight.join(', ')}`);
    await slow;
    tt.deepEqual([await sum('tensorbus.rpc.in_flight', { 'tensorbus.worker': `${A}g` }), await sum('tensorbus.rpc.in_flight', { 'tensorbus.worker': `${B}g` })], [0, 0], 'none once it returned');
    tt.is(await sum('tensorbus.rrefs.owned', { 'tensorbus.worker': `${B}g` }), 1);
    tt.is(await sum('tensorbus.rrefs.used', { 'tensorbus.worker': `${A}g` }), 1);
    await a!.distAutograd.context(async () => {
      tt.is(await sum('tensorbus.autograd.contexts', { 'tensorbus.worker': `${A}g` }), 1);
    });
    tt.is(await sum('tensorbus.autograd.contexts', { 'tensorbus.worker': `${A}g` }), 0);
    const held = tf.ones([3]);
    tt.is(await sum('tensorbus.tensors', { 'tensorbus.worker': `${A}g` }), tf.memory().numTensors, 'the tensors of the process');
    held.dispose();
    const [heap] = await points('tensorbus.wasm_heap', { 'tensorbus.worker': `${A}g` });
    if (tensorBackend() === 'wasm') tt.true((heap!.value as number) >= 1 << 20, `a WASM heap of ${String(heap!.value)} bytes`);
    else tt.is(heap!.value, 0, 'no WASM heap on this backend');
    await counter.release();
  });
}
