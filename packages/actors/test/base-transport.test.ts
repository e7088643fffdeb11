/**
 * The protocols on the base Transport alone: a transport that has none of the
 * capabilities (no sinks, deferred bytes or canceller, no route reports, no
 * beacon) still carries calls, RRefs and distributed autograd, is asked for
 * nothing beyond the base interface, and leaks no tensor.
 */
import test from 'ava';
import type { Observable } from 'rxjs';
import {
  hasBeacon,
  hasSinks,
  localTransport,
  reportsRoutes,
  tf,
  type Frame,
  type InboundMessage,
  type Payload,
  type RequestOptions,
  type SubscribeOptions,
  type Transport,
  type TransportStatus,
  type TransportSubscription,
} from '@tensorbus/core';
import { initRpc, type RpcAgent, type RRef } from '../src/index.js';
import { assertClose, localGrads, variable } from './autograd-helpers.js';
import { add } from './fixtures/autograd-functions.js';
import { echo } from './fixtures/functions.js';
import { bytesOf, eventually, patternTensor, stopAll } from './helpers.js';

/** The base interface and nothing else, over the in-process bus; records the option names protocols hand it. */
class BaseOnlyTransport implements Transport {
  readonly kind = 'base-only';
  readonly requestOptions = new Set<string>();
  readonly subscribeOptions = new Set<string>();
  private readonly inner: Transport;

  constructor(bus: string) {
    this.inner = localTransport({ bus });
  }

  get maxPayload(): number {
    return this.inner.maxPayload;
  }

  get status$(): Observable<TransportStatus> {
    return this.inner.status$;
  }

  request(subject: string, data: Payload, options: RequestOptions = {}): Promise<Frame> {
    for (const name of Object.keys(options)) this.requestOptions.add(name);
    return this.inner.request(subject, data, { timeoutMs: options.timeoutMs, signal: options.signal });
  }

  publish(subject: string, data: Uint8Array | Frame): void {
    this.inner.publish(subject, data);
  }

  subscribe(subject: string, handler: (message: InboundMessage) => void, options: SubscribeOptions = {}): TransportSubscription {
    for (const name of Object.keys(options)) this.subscribeOptions.add(name);
    return this.inner.subscribe(subject, handler, { queue: options.queue, onError: options.onError });
  }

  flush(): Promise<void> {
    return this.inner.flush();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

test('base transport - it has no capability: the guards say so', (t) => {
  const transport = new BaseOnlyTransport(`guards-${process.pid}`);
  t.false(hasSinks(transport));
  t.false(reportsRoutes(transport));
  t.false(hasBeacon(transport));
  const local = localTransport({ bus: `guards-${process.pid}` });
  t.true(hasSinks(local), 'the in-process transport moves frames piece by piece');
  t.true(reportsRoutes(local));
  t.false(hasBeacon(local), 'in one process, a busy worker is the caller itself: no beacon');
});

test('base transport - calls, an RRef and a distributed autograd round trip work without any capability', async (t) => {
  const bus = `base-only-${process.pid}`;
  const transports = ['a', 'b'].map(() => new BaseOnlyTransport(bus));
  const agents: RpcAgent[] = await Promise.all(
    ['a', 'b'].map((name, i) => initRpc({ name, transport: transports[i]!, heartbeatMs: 100, failureTimeoutMs: 600 })),
  );
  t.teardown(() => stopAll(agents));
  const [a, b] = agents as [RpcAgent, RpcAgent];
  await eventually(() => agents.every((agent) => agent.workers().length === 2));
  const roundTrip = async () => {
    // A call, with a small and a large tensor (1 MB: what a sink-capable transport would stream).
    t.is(await a.rpcSync('b', echo, ['hello']), 'hello');
    const large = patternTensor(2 ** 18, 3);
    const back = (await a.rpcSync('b', echo, [large])) as tf.Tensor;
    t.true(bytesOf(back).equals(bytesOf(large)), 'the large tensor came back whole');
    tf.dispose([large, back]);

    // An RRef: made on b, fetched, and released.
    const [one, ten] = [tf.tensor1d([1, 2]), tf.tensor1d([10, 20])];
    const ref = a.remote('b', add, [one, ten]) as RRef<tf.Tensor>;
    const here = await ref.toHere();
    t.deepEqual([...(await here.data())], [11, 22]);
    tf.dispose([one, ten, here]);
    await ref.release();

    // Distributed autograd: a remote op between local variables, a local loss.
    const x = variable([2, 2], 7);
    const w = variable([2, 2], 8);
    const expected = localGrads((x1, w1) => tf.sum(tf.mul(tf.add(x1, w1), w1)), [x, w]);
    await a.distAutograd.context(async (ctxId) => {
      const sum = await a.rpcSync('b', add, [x, w]);
      const product = tf.mul(sum, w);
      const loss = tf.sum(product);
      await a.distAutograd.backward(ctxId, [loss]);
      await assertClose(t, a.distAutograd.getGradients(ctxId).get(x), expected[0]!, 'x');
      await assertClose(t, a.distAutograd.getGradients(ctxId).get(w), expected[1]!, 'w');
      t.true(b.distAutograd.has(ctxId), 'the callee joined the context');
      tf.dispose([sum, product, loss]);
    });
    await eventually(() => agents.every((agent) => agent.distAutograd.size === 0));
    tf.dispose([x, w, ...expected]);
  };
  // The first pass makes what lives as long as the process (kernels, the first context's state): the baseline is taken after it.
  await roundTrip();
  const baseline = tf.memory().numTensors;
  await roundTrip();

  // The protocols asked for nothing the base interface does not have.
  for (const transport of transports) {
    t.deepEqual([...transport.requestOptions].filter((name) => !['timeoutMs', 'signal'].includes(name)), [], 'request options beyond the base');
    t.deepEqual([...transport.subscribeOptions].filter((name) => !['queue', 'onError'].includes(name)), [], 'subscribe options beyond the base');
  }
  await eventually(() => tf.memory().numTensors === baseline, 5_000).catch(() => undefined);
  t.is(tf.memory().numTensors, baseline, 'no tensor leaked');
});
