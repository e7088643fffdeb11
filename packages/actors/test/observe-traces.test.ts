/**
 * OpenTelemetry traces over every transport: the span tree of a nested call
 * (a → b → c) with the W3C trace context carried by the calls, the
 * attributes of each span, failed calls, and a hostile traceparent ignored.
 */
import test from 'ava';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { defaultCodec, RemoteError, tf } from '@tensorbus/core';
import { refreshObservability } from '../src/index.js';
import { callSubject } from '../src/agent/subjects.js';
import { OK_UNCOUNTED } from '../src/agent/call-protocol.js';
import { parseTraceparent, formatTraceparent } from '../src/observe/trace-context.js';
import { Counter, echo, fail } from './fixtures/functions.js';
import { observedFields, relay } from './fixtures/observe-functions.js';
import { rrefValue } from './fixtures/rref-functions.js';
import { eventually, rrefsReleased, startGroup, stopEverything, transportKinds } from './helpers.js';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
refreshObservability();

test.after.always(stopEverything);

/** The spans of one trace whose root is the client span of `fn` made by `worker`. */
function traceOf(worker: string, fn: string): ReadableSpan[] {
  const root = exporter.getFinishedSpans().find((s) => s.kind === SpanKind.CLIENT && s.attributes['tensorbus.worker'] === worker && s.attributes['rpc.method'] === fn);
  if (root === undefined) return [];
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === root.spanContext().traceId);
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

test('observe - traceparent: only the W3C form with non-zero ids is taken', (t) => {
  const good = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  const parsed = parseTraceparent(good);
  t.is(parsed?.traceId, '0af7651916cd43dd8448eb211c80319c');
  t.is(parsed?.spanId, 'b7ad6b7169203331');
  t.is(parsed?.isRemote, true);
  t.is(formatTraceparent(parsed!), good);
  for (const bad of [
    undefined,
    42,
    { traceId: 'x' },
    '',
    `${good} `,
    good.toUpperCase(),
    'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    '00-00000000000000000000000000000000-b7ad6b7169203331-01',
    '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
    `00-${'a'.repeat(100_000)}`,
  ]) {
    t.is(parseTraceparent(bad), undefined, `refused: ${JSON.stringify(bad)?.slice(0, 40)}`);
  }
});

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - observe - ${title}`;

  test.serial(t('a nested call a → b → c is one trace: client and server spans linked parent to child, with their attributes'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b', 'c']);
    exporter.reset();
    const baseline = tf.memory().numTensors;
    const x = tf.ones([1000]);
    const back = (await a!.rpcSync('b', relay, ['c', x])) as tf.Tensor;
    back.dispose();
    x.dispose();
    tt.is(tf.memory().numTensors, baseline, 'tracing keeps no tensor');
    await eventually(() => traceOf('a', 'obs.relay').length === 4);
    const spans = traceOf('a', 'obs.relay');
    const find = (k: SpanKind, worker: string) => spans.find((s) => s.kind === k && s.attributes['tensorbus.worker'] === worker)!;
    const aClient = find(SpanKind.CLIENT, 'a');
    const bServer = find(SpanKind.SERVER, 'b');
    const bClient = find(SpanKind.CLIENT, 'b');
    const cServer = find(SpanKind.SERVER, 'c');
    tt.truthy(aClient && bServer && bClient && cServer, 'four spans: a calls b, b serves and calls c, c serves');
    tt.is(parentOf(bServer), aClient.spanContext().spanId, "b's server span is the child of a's client span");
    tt.is(parentOf(bClient), bServer.spanContext().spanId, "b's nested call is the child of the call b serves");
    tt.is(parentOf(cServer), bClient.spanContext().spanId, "c's server span is the child of b's client span");
    tt.is(aClient.name, 'rpc obs.relay');
    tt.is(cServer.name, 'rpc test.echo');
    tt.is(aClient.attributes['tensorbus.peer'], 'b');
    tt.is(bServer.attributes['tensorbus.peer'], 'a', 'the server span names its caller');
    tt.is(bClient.attributes['rpc.method'], 'test.echo');
    tt.is(cServer.attributes['tensorbus.caller_verified'], true);
    const carried = (await a!.rpcSync('b', observedFields, [])) as { tc: string | null };
    tt.regex(carried.tc ?? '', /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'a traced call carries its traceparent in meta.tc');
    for (const span of spans) {
      tt.is(span.attributes['tensorbus.outcome'], 'OK', `${span.name}: outcome`);
      tt.true((span.attributes['tensorbus.sent_bytes'] as number) > 0 && (span.attributes['tensorbus.received_bytes'] as number) > 0, `${span.name}: bytes each way`);
      tt.is(span.status.code, SpanStatusCode.UNSET);
    }
    // 1000 float32 go both ways on every hop.
    tt.true((aClient.attributes['tensorbus.sent_bytes'] as number) >= 4000 && (aClient.attributes['tensorbus.received_bytes'] as number) >= 4000);
    const expectedRoute = kind.name === 'local' ? 'in-process' : undefined;
    if (expectedRoute !== undefined) tt.is(aClient.attributes['tensorbus.route'], expectedRoute);
    else tt.true(['nats', 'shm', 'tcp'].includes(aClient.attributes['tensorbus.route'] as string), `route ${String(aClient.attributes['tensorbus.route'])}`);
    // Client span covers the server span: it starts before and ends after.
    tt.true(aClient.startTime[0] * 1e9 + aClient.startTime[1] <= bServer.startTime[0] * 1e9 + bServer.startTime[1]);
  });

  test.serial(t('a failed call: both spans carry the error code and an error status'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    exporter.reset();
    await tt.throwsAsync(a!.rpcSync('b', fail, ['traced failure']), { instanceOf: RemoteError });
    await eventually(() => traceOf('a', 'test.fail').length === 2);
    for (const span of traceOf('a', 'test.fail')) {
      tt.is(span.attributes['tensorbus.outcome'], 'REMOTE_ERROR', `${span.name} (${span.kind})`);
      tt.is(span.status.code, SpanStatusCode.ERROR);
    }
  });

  test.serial(t('a hostile traceparent is ignored: the call is served, its span starts a trace of its own'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    exporter.reset();
    // A request written by hand, as any client of the bus may send one.
    for (const tc of ['00-zz-zz-01', 'x'.repeat(100_000), { traceId: 1 }, '00-00000000000000000000000000000000-b7ad6b7169203331-01']) {
      const reply = await a!.transport.request(callSubject('b'), defaultCodec.encode([0, 'test.echo', ['hi'], { from: 'a', tc }]), { timeoutMs: 5_000 });
      // Served as the unverified call it is (no MAC): an OK the callee did not count (call-protocol.ts).
      tt.deepEqual(defaultCodec.decode(reply), [OK_UNCOUNTED, 'hi']);
    }
    await eventually(() => exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER).length === 4);
    for (const span of exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER)) {
      tt.is(parentOf(span), undefined, 'no parent taken from a bad traceparent');
      tt.is(span.attributes['tensorbus.caller_verified'], false);
      tt.is(span.attributes['tensorbus.outcome'], 'OK');
    }
    tt.is((await a!.rpcSync('b', echo, ['still fine'])) as string, 'still fine');
  });

  test.serial(t('RRef messages are spans: each fork and delete sent is the parent of its handling on the receiver'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c']);
    const [a] = agents;
    exporter.reset();
    const counter = a!.remote('b', Counter, [5]);
    // Passing the RRef to c makes c a user: c asks the owner b to confirm its fork.
    tt.like(await a!.rpcSync('c', rrefValue, [counter]), { n: 5 });
    await counter.release();
    await rrefsReleased(agents);
    const control = () => exporter.getFinishedSpans().filter((s) => s.name.startsWith('ctl rref.'));
    await eventually(() => control().some((s) => s.name === 'ctl rref.delete' && s.kind === SpanKind.CONSUMER));
    const spans = control();
    const consumers = spans.filter((s) => s.kind === SpanKind.CONSUMER);
    tt.true(consumers.some((s) => s.name === 'ctl rref.fork'), spans.map((s) => `${s.name}/${s.kind}`).join(', '));
    for (const consumer of consumers) {
      const producer = spans.find((s) => s.kind === SpanKind.PRODUCER && s.spanContext().spanId === parentOf(consumer));
      tt.truthy(producer, `${consumer.name} on ${String(consumer.attributes['tensorbus.worker'])} has the sender's span as parent`);
      tt.is(producer!.name, consumer.name);
      tt.is(producer!.attributes['tensorbus.peer'], consumer.attributes['tensorbus.worker'], 'sent to the worker that handled it');
      tt.is(consumer.attributes['tensorbus.outcome'], 'OK');
    }
    const deleted = consumers.find((s) => s.name === 'ctl rref.delete')!;
    tt.is(deleted.attributes['tensorbus.worker'], 'b', 'the owner handles the delete');
  });
}
