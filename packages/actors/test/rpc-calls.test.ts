import test from 'ava';
import type { Tensor } from '@tensorflow/tfjs';
import { InvalidArgumentError, localTransport, RemoteError, RequestFailure, WorkerUnavailableError, RpcFuture, RpcTimeoutError, SerializationError, ShutdownError, STREAM_MIN_BYTES, tf, UnknownFunctionError, type Transport } from '@tensorbus/core';
import type { DirectStats } from '@tensorbus/nats-transport';
import { addNumbers, add, callerOf, echo, tile, fail, failAsync, hop, nested, returnsFunction, sleep, whoAmI } from './fixtures/functions.js';
import { bytesOf, eventually, patternTensor, startGroup, stopAll, transportKinds } from './helpers.js';
import { stopEverything } from './helpers.js';
import { initRpc } from '../src/index.js';
import { KEEP_EMPTY_SETS } from '../src/agent/call-client.js';
import { hostOf } from '../src/agent/rpc-agent.js';

test.after.always(stopEverything);

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - rpc - ${title}`;

  test(t('calls itself, by name, rank and WorkerInfo'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], { worldSize: 2 });
    const [a, b] = agents as [typeof agents[0], typeof agents[0]];
    tt.is(await a.rpcSync('a', whoAmI, []), 'a');
    tt.is(await a.rpcSync('b', whoAmI, []), 'b');
    tt.is(await a.rpcSync(1, whoAmI, []), 'b');
    tt.is(await a.rpcSync(b.self, whoAmI, []), 'b');
    tt.is(await b.rpcSync(0, addNumbers, [2, 3]), 5);
    tt.deepEqual(a.getWorkerInfo('b'), { name: 'b', id: 1 });
    tt.deepEqual(a.workers().map((w) => w.name), ['a', 'b']);
    await stopAll(agents);
  });

  test(t('tensors nested anywhere arrive with dtype, shape and values; ops run as builtins'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a] = agents;
    const x = tf.tensor2d([[1, 2], [3, 4]]);
    const y = tf.tensor2d([[10, 20], [30, 40]]);
    const sum = await a!.rpcSync('b', add, [x, y]);
    tt.deepEqual(sum.shape, [2, 2]);
    tt.deepEqual([...(await sum.data())], [11, 22, 33, 44]);
    const viaOp = await a!.rpcSync('b', tf.matMul, [x, y]);
    tt.deepEqual([...(await viaOp.data())], [...(await tf.matMul(x, y).data())]);
    const ints = (await a!.rpcSync('b', echo, [tf.tensor1d([1, 2, 3], 'int32')])) as tf.Tensor;
    tt.is(ints.dtype, 'int32');
    const out = await a!.rpcSync('b', nested, [{ list: [x, y], map: new Map([['k', tf.ones([2, 2])]]), deep: { t: tf.ones([2, 2]) } }]);
    tt.deepEqual([...(await out.sum.data())], [13, 24, 35, 46]);
    tt.deepEqual(out.keys, ['k']);
    tt.deepEqual([...(await out.echo[0]!.data())], [1, 2, 3, 4]);
    tt.false(x.isDisposed, 'the caller keeps its arguments');
    await stopAll(agents);
  });

  test(t('a throwing function rejects with RemoteError naming the worker and the original error'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const error = await tt.throwsAsync(agents[0]!.rpcSync('b', fail, ['boom']), { instanceOf: RemoteError });
    tt.is(error!.code, 'REMOTE_ERROR');
    tt.is(error!.worker, 'b');
    tt.is(error!.remoteName, 'RangeError');
    tt.is(error!.remoteMessage, 'boom');
    tt.is(error!.remoteCode, 'E_TEST');
    tt.regex(error!.message, /'b'.*RangeError.*boom/);
    tt.regex(error!.remoteStack ?? '', /functions/);
    const asyncError = await tt.throwsAsync(agents[0]!.rpcSync('b', failAsync, ['later']), { instanceOf: RemoteError });
    tt.is(asyncError!.remoteName, 'TypeError');
    await stopAll(agents);
  });

  test(t('unknown functions, bad arguments and unencodable values fail with typed errors'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a] = agents;
    const unknown = await tt.throwsAsync(a!.rpcSync('b', 'no.such.function', []), { instanceOf: UnknownFunctionError });
    tt.regex(unknown!.message, /no\.such\.function/);
    await tt.throwsAsync(a!.rpcSync('b', 'tf.setBackend', ['cpu']), { instanceOf: UnknownFunctionError });
    await tt.throwsAsync(async () => a!.rpcSync('b', (() => 1) as never, []), { instanceOf: InvalidArgumentError });
    await tt.throwsAsync(async () => a!.rpcSync('b', echo, [() => 1]), { instanceOf: SerializationError });
    await tt.throwsAsync(a!.rpcSync('b', returnsFunction, []), { instanceOf: SerializationError });
    await tt.throwsAsync(async () => a!.rpcSync('not a name!', echo, [1]), { instanceOf: InvalidArgumentError });
    await tt.throwsAsync(async () => a!.rpcSync(7, echo, [1]), { code: 'WORKER_UNAVAILABLE' });
    await tt.throwsAsync(a!.rpcSync('nobody', echo, [1]), { code: 'WORKER_UNAVAILABLE' });
    tt.is(await a!.rpcSync('b', echo, ['still fine']), 'still fine');
    await stopAll(agents);
  });

  test(t('a name nobody serves and a callee that goes away mid-call fail with different reasons'), async (tt) => {
    // Membership is slow here on purpose: the transport, not the failure detector, tells the caller. Except on
    // the bus, which cannot see a callee's end go away (see Transport.request): there the failure detector does.
    const blind = kind.route === 'nats';
    const agents = await startGroup(kind, ['a', 'b'], { heartbeatMs: 100, failureTimeoutMs: blind ? 1_000 : 20_000 });
    const [a, b] = agents as [typeof agents[0], typeof agents[0]];
    const nobody = await tt.throwsAsync(a.rpcSync('nobody', echo, [1]), { instanceOf: WorkerUnavailableError });
    tt.is(nobody!.reason, RequestFailure.NoResponders);
    tt.regex(nobody!.message, /'nobody' is not in the group/);
    // The first reply names b's direct route; the second call travels it, so the connection is open before the
    // call that b leaves in the middle of (a request whose connection could not open yet was never delivered, and
    // goes to the bus: there "nobody serves it" is the right answer, and a loaded machine can be that slow).
    tt.is(await a.rpcSync('b', echo, [1]), 1);
    tt.is(await a.rpcSync('b', echo, [2]), 2);
    const pending = tt.throwsAsync(a.rpcSync('b', sleep, [5_000], { timeoutMs: 0 }), { instanceOf: WorkerUnavailableError });
    await new Promise((resolve) => setTimeout(resolve, 100));
    // b's connection goes without a goodbye, as when its process dies.
    await b.transport.close();
    const lost = await pending;
    if (blind) {
      tt.is(lost!.reason, undefined, 'no transport reason: the failure detector ended the call');
      tt.regex(lost!.message, /'b' stopped answering \(no heartbeat for 1000 ms\)/);
    } else {
      tt.is(lost!.reason, RequestFailure.ResponderLost);
      tt.regex(lost!.message, /'b' went away during the call of 'test\.sleep'/);
    }
    await stopAll(agents);
  });

  test(t('calls to many names nobody serves leave a bounded table of destinations behind'), async (tt) => {
    const agents = await startGroup(kind, ['a']);
    const calls = hostOf(agents[0]!).calls;
    for (let i = 0; i < KEEP_EMPTY_SETS + 100; i++) {
      await tt.throwsAsync(agents[0]!.rpcSync(`nobody${i}`, echo, [1]), { instanceOf: WorkerUnavailableError });
    }
    tt.true(calls.destinationsTracked <= KEEP_EMPTY_SETS + 1, `${calls.destinationsTracked} destinations kept`);
    tt.is(calls.inFlight, 0);
    await stopAll(agents);
  });

  // Serial: its bounds are the product's wall-clock promises, not to be shared with the file's dozens of concurrent groups starting.
  test.serial(t('timeouts: per call, agent default, 0 means none; AbortSignal cancels'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], { rpcTimeoutMs: 150 });
    const [a] = agents;
    // The fixture's sleeps are unref'd; run alone over the local transport, nothing else would hold the event loop while one runs.
    const alive = setInterval(() => undefined, 1_000);
    tt.teardown(() => clearInterval(alive));
    const started = Date.now();
    // Bounds here are half of what a wait for the slow side would take: loaded CI machines stall event loops.
    await tt.throwsAsync(a!.rpcSync('b', sleep, [4_000]), { instanceOf: RpcTimeoutError });
    tt.true(Date.now() - started < 2_000, `timed out after ${Date.now() - started} ms`);
    await tt.throwsAsync(a!.rpcSync('b', sleep, [300], { timeoutMs: 50 }), { instanceOf: RpcTimeoutError });
    tt.is(await a!.rpcSync('b', sleep, [300], { timeoutMs: 0 }), 300);
    tt.is(await a!.rpcSync('b', sleep, [10], { timeoutMs: 1_000 }), 10);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    await tt.throwsAsync(a!.rpcSync('b', sleep, [1_000], { signal: controller.signal, timeoutMs: 0 }), { name: 'AbortError' });
    await tt.throwsAsync(a!.rpcSync('b', sleep, [1], { signal: AbortSignal.abort() }), { name: 'AbortError' });
    await stopAll(agents);
  });

  test(t('the default call timeout is readable and read-only [get_rpc_timeout()]'), async (tt) => {
    const agents = [...(await startGroup(kind, ['a'], { rpcTimeoutMs: 150 })), ...(await startGroup(kind, ['b'])), ...(await startGroup(kind, ['c'], { rpcTimeoutMs: 0 }))];
    const [a, b, c] = agents;
    tt.is(a!.rpcTimeoutMs, 150);
    tt.is(b!.rpcTimeoutMs, 60_000, 'the default');
    tt.is(c!.rpcTimeoutMs, 0, '0 means none');
    tt.throws(() => {
      (a as { rpcTimeoutMs: number }).rpcTimeoutMs = 5;
    }, { instanceOf: TypeError });
    tt.is(a!.rpcTimeoutMs, 150);
    await stopAll(agents);
  });

  test(t('rpcAsync futures: await, wait, done, observable, all rejecting early'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c']);
    const [a] = agents;
    const f = a!.rpcAsync('b', addNumbers, [1, 2]);
    tt.false(f.done());
    tt.is(await f, 3);
    tt.true(f.done());
    tt.is(await a!.rpcAsync('c', addNumbers, [2, 2]).wait(), 4);
    const values: number[] = [];
    await new Promise<void>((resolve) => a!.rpcAsync('c', addNumbers, [5, 5]).asObservable().subscribe({ next: (v) => values.push(v), complete: resolve }));
    tt.deepEqual(values, [10]);
    tt.deepEqual(await RpcFuture.all([a!.rpcAsync('b', addNumbers, [1, 1]), a!.rpcAsync('c', addNumbers, [2, 2])]), [2, 4]);
    const started = Date.now();
    const slow = a!.rpcAsync('b', sleep, [3_000]);
    await tt.throwsAsync(RpcFuture.all([slow, a!.rpcAsync('c', fail, ['early'])]), { instanceOf: RemoteError });
    tt.true(Date.now() - started < 1_500, 'all() rejects without waiting for the slow call');
    await slow;
    await stopAll(agents);
  });

  test(t('async functions do not block the callee, and 20-hop nested chains do not deadlock'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c']);
    const [a] = agents;
    const slow = a!.rpcAsync('b', sleep, [1_500, 'slow']);
    let slowSettled = false;
    void slow.then(() => (slowSettled = true));
    tt.is(await a!.rpcSync('b', addNumbers, [1, 1]), 2);
    tt.false(slowSettled, 'the callee served a second call while the first one waited');
    tt.is(await slow, 'slow');
    const path = await a!.rpcSync('a', hop, [['a', 'b', 'c'], 20]);
    tt.is(path.length, 21);
    tt.deepEqual(path.slice(0, 4), ['a', 'b', 'c', 'a']);
    const selfPath = await a!.rpcSync('a', hop, [['a'], 20]);
    tt.is(selfPath.length, 21);
    await stopAll(agents);
  });

  test(t('currentAgent inside a call is the callee; the caller is visible to it'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    tt.deepEqual(await agents[0]!.rpcSync('b', callerOf, []), { name: 'b', id: agents[1]!.self.id });
    await stopAll(agents);
  });

  test.serial(t('no tensor leaks on either side after 10,000 calls'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a] = agents;
    const x = tf.ones([16]);
    await a!.rpcSync('b', add, [x, x]).then((r) => r.dispose());
    const baseline = tf.memory().numTensors;
    const window = 64;
    let sent = 0;
    const worker = async () => {
      while (sent < 10_000) {
        sent++;
        const r = await a!.rpcSync('b', add, [x, x]);
        r.dispose();
      }
    };
    await Promise.all(Array.from({ length: window }, worker));
    tt.is(tf.memory().numTensors, baseline);
    x.dispose();
    await stopAll(agents);
  });

  test.serial(t('large tensors go and come back intact (over NATS streamed, in-process shared); the caller may dispose its argument at once; none are left'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a, b] = agents as [typeof agents[0], typeof agents[0]];
    await a.rpcSync('b', whoAmI, []); // over NATS, later calls take the direct route this one's reply offers
    const baseline = tf.memory().numTensors;
    // Over NATS between processes of one host, frames up to 64 MiB go whole through shared memory: this one streams.
    const floats = 2 ** 24 + 4096;
    tt.true(floats * 4 >= STREAM_MIN_BYTES);
    const x = patternTensor(floats, 11);
    const expected = bytesOf(x);
    const future = a.rpcAsync('b', echo, [x]);
    x.dispose();
    const back = (await future) as Tensor;
    tt.true(bytesOf(back).equals(expected));
    tt.deepEqual(back.shape, [floats]);
    back.dispose();
    // The callee's reply keeps its tensor until the last byte is written.
    await eventually(() => tf.memory().numTensors === baseline);
    // A 1 MB request (on the shared-memory route: a segment reference) whose reply is large.
    const piece = patternTensor(2 ** 18, 12);
    const tiled = (await a.rpcSync('b', tile, [piece, 65])) as Tensor;
    tt.deepEqual(tiled.shape, [65 * 2 ** 18]);
    tt.true(bytesOf(tiled).subarray(64 * 2 ** 20).equals(bytesOf(piece)), 'the last copy of the piece arrived intact');
    tiled.dispose();
    piece.dispose();
    await eventually(() => tf.memory().numTensors === baseline);
    const stats = (agent: typeof a) => (agent.transport as { directStats?: DirectStats }).directStats;
    if (kind.route === 'tcp' || kind.route === 'shm') {
      // Over TCP the 1 MB request streams too; in shared memory it goes whole, as a segment reference.
      const sent = kind.route === 'tcp' ? 2 : 1;
      tt.like(stats(a), { streamedSent: sent, streamedReceived: 2 }, 'the requests were read out of tensor memory as sent, the replies straight into it');
      tt.like(stats(b), { streamedSent: 2 });
    } else if (kind.route === 'nats') {
      // Streaming is the direct routes' mechanism: the bus carries frames whole, in chunks.
      tt.like(stats(a), { calls: 0, streamedSent: 0, streamedReceived: 0 });
    } else {
      // In one process a large tensor is shared both ways, not copied.
      const y = patternTensor(floats, 13);
      const buffersBefore = tf.memory().numDataBuffers;
      const same = (await a.rpcSync('b', echo, [y])) as Tensor;
      tt.is(tf.memory().numDataBuffers, buffersBefore, 'no tensor memory was allocated for the result');
      const sent = bytesOf(y);
      y.dispose();
      tt.true(bytesOf(same).equals(sent), 'the result outlives the argument it shares memory with');
      same.dispose();
      await eventually(() => tf.memory().numTensors === baseline);
    }
    await stopAll(agents);
  });
}

/** `base` as a transport written before deferred bytes existed: it says nothing of them, and records what it is given. */
function bytesOnly(base: Transport, given: unknown[]): Transport {
  return {
    kind: base.kind,
    maxPayload: base.maxPayload,
    status$: base.status$,
    request: (subject, data, options) => {
      given.push(data);
      return base.request(subject, data, options);
    },
    publish: (subject, data) => base.publish(subject, data),
    subscribe: (subject, handler, options) =>
      base.subscribe(subject, (m) => handler({ subject: m.subject, data: m.data, reply: m.reply, respond: (answer) => (given.push(answer), m.respond(answer)) }), options),
    flush: () => base.flush(),
    close: () => base.close(),
  };
}

/** `base` as a transport of the base interface alone (no canceller: that comes with the sink capability), which closes `base` only when `release` is called. */
function noCanceller(base: Transport): Transport & { release(): Promise<void> } {
  return {
    kind: base.kind,
    maxPayload: base.maxPayload,
    status$: base.status$,
    request: (subject, data, options) => base.request(subject, data, options),
    publish: (subject, data) => base.publish(subject, data),
    subscribe: (subject, handler, options) => base.subscribe(subject, handler, options),
    flush: () => base.flush(),
    close: async () => undefined,
    release: () => base.close(),
  };
}

test('rpc - over a transport that hands out no canceller, a non-graceful shutdown still fails pending calls at once', async (t) => {
  const bus = `no-canceller-${process.pid}`;
  const transport = noCanceller(localTransport({ bus }));
  const a = await initRpc({ name: 'a', transport });
  const b = await initRpc({ name: 'b', transport: localTransport({ bus }) });
  const pending = t.throwsAsync(a.rpcSync('b', sleep, [3_000], { timeoutMs: 0 }), { instanceOf: ShutdownError });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const started = Date.now();
  await a.shutdown({ graceful: false });
  await pending;
  t.true(Date.now() - started < 1_500, 'the call did not wait for the transport');
  await b.shutdown({ graceful: false });
  await transport.release();
});

test('rpc - a transport that does not take deferred bytes is given whole frames, large tensors included', async (t) => {
  const bus = `bytes-only-${process.pid}`;
  const given: unknown[] = [];
  const agents = await Promise.all(['a', 'b'].map((name) => initRpc({ name, transport: bytesOnly(localTransport({ bus }), given), heartbeatMs: 100, failureTimeoutMs: 600 })));
  const x = patternTensor(2 ** 20, 14);
  const back = (await agents[0]!.rpcSync('b', echo, [x])) as Tensor;
  t.true(bytesOf(back).equals(bytesOf(x)));
  t.true(given.length >= 2);
  t.true(given.every((data) => data instanceof Uint8Array));
  back.dispose();
  x.dispose();
  await stopAll(agents);
});
