/**
 * State peers make on a worker over a real nats-server: bounded per peer,
 * dropped when the peer goes or, for callers that are not members, after a
 * lease; unknown ids fail at once; values' tensors are freed with them; only
 * tensor ops and the methods of the value's own class (a tensor's included)
 * are callable remotely; autograd releases survive a bus outage; backward has a timeout.
 */
import test from 'ava';
import { AutogradError, InvalidArgumentError, RpcTimeoutError, RRefError, SerializationError, tf, UnknownFunctionError, type Transport } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { DistributedOptimizer, initRpc, type InitRpcOptions, type RpcAgent, type RRef } from '../src/index.js';
import { CallAuth } from '../src/agent/call-auth.js';
import { CallClient } from '../src/agent/call-client.js';
import { Identity } from '../src/agent/identity.js';
import { linear, makeVariable } from './fixtures/autograd-functions.js';
import { bagDisposals, keepRRefs, releaseHeld, TensorBag, useAll } from './fixtures/peer-functions.js';
import { eventually } from './helpers.js';
import { hostOf, RREFS } from '../src/internal.js';

const zero = { owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 };
const started: RpcAgent[] = [];
const transports: Transport[] = [];
let groups = 0;

test.after.always(async () => {
  await Promise.all(started.map((a) => a.shutdown({ graceful: false }).catch(() => undefined)));
  await Promise.all(transports.map((t) => t.close().catch(() => undefined)));
});

/** Call subjects whose deliveries are dropped while listed (a lost message, a bus outage). */
const blackholes = new Set<string>();

/** `inner`, except that messages arriving on a subject in `blackholes` are dropped. */
function lossy(inner: Transport): Transport {
  return new Proxy(inner, {
    get(target, key) {
      if (key === 'subscribe') {
        return (subject: string, handler: Parameters<Transport['subscribe']>[1], options?: Parameters<Transport['subscribe']>[2]) =>
          target.subscribe(subject, (message) => {
            if (!blackholes.has(subject)) handler(message);
          }, options);
      }
      const value = Reflect.get(target, key, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** Agents `names` on the shared nats-server, in a fresh namespace; `outsider` is a raw caller there that is not a member. */
async function natsGroup(
  names: string[],
  options: Partial<InitRpcOptions> = {},
  only: Record<string, Partial<InitRpcOptions>> = {},
): Promise<{ agents: RpcAgent[]; outsider: CallClient }> {
  const server = await sharedNatsServer();
  const namespace = `pr${process.pid}x${++groups}`;
  const agents = await Promise.all(
    names.map(async (name) =>
      initRpc({ name, transport: lossy(await natsTransport({ servers: server.url, namespace })), heartbeatMs: 100, failureTimeoutMs: 1_000, ...options, ...only[name] }),
    ),
  );
  started.push(...agents);
  const raw = await natsTransport({ servers: server.url, namespace });
  transports.push(raw);
  return { agents, outsider: new CallClient(raw, 'outsider', undefined, () => 5_000, new CallAuth(new Identity(), 'outsider', () => undefined)) };
}

function since(start: number): number {
  return Date.now() - start;
}

test.serial('peer resources - RRefs a non-member creates are bounded per peer and dropped after their lease', async (t) => {
  const { agents, outsider } = await natsGroup(['w'], { peerLimits: { rrefsPerPeer: 5, leaseMs: 1_500 } });
  const [w] = agents as [RpcAgent];
  const baseline = tf.memory().numTensors;
  const create = (i: number) => outsider.call('w', 'tb.rref.create', [`outsider.x.${i}`, `outsider.f.${i}`, { fn: 'tf.ones', args: [[1_000]] }], { from: 'outsider' });
  for (let i = 0; i < 5; i++) await create(i);
  t.is(w.rrefStats().owners, 5);
  const error = await t.throwsAsync(create(5), { instanceOf: RRefError });
  t.is(error!.code, 'RREF_LIMIT_EXCEEDED');
  t.is(w.rrefStats().owners, 5, 'the refused creation made nothing');
  t.is(tf.memory().numTensors, baseline + 5);
  // Another peer's bound is its own.
  const spoofed = await t.throwsAsync(outsider.call('w', 'tb.rref.create', ['w.stolen.1', 'outsider.f.9', { fn: 'tf.ones', args: [[4]] }], { from: 'outsider' }), { instanceOf: RRefError });
  t.is(spoofed!.code, 'RREF_CREATION_FAILED', "an id outside the caller's own prefix is refused");
  await eventually(() => w.rrefStats().owners === 0, 10_000);
  t.deepEqual(w.rrefStats(), zero);
  t.is(tf.memory().numTensors, baseline, 'the values of the expired RRefs were disposed');
  await create(6);
  t.is(w.rrefStats().owners, 1, 'room again once the lease dropped them');
  await eventually(() => w.rrefStats().owners === 0, 10_000);
  t.is(tf.memory().numTensors, baseline);
});

test.serial('peer resources - RRefs arriving at a worker are bounded per owner; one past the bound arrives failed and is not left pending on its owner', async (t) => {
  // Only w is strict: a (the owner) would send any number of forks.
  const { agents } = await natsGroup(['a', 'w'], {}, { w: { peerLimits: { rrefsPerPeer: 3 } } });
  const [a, w] = agents as [RpcAgent, RpcAgent];
  const refs = Array.from({ length: 5 }, (_, i) => a.rref({ i }));
  t.is(await a.rpcSync('w', keepRRefs, [refs.slice(0, 3)]), 3);
  t.deepEqual(await a.rpcSync('w', useAll, [refs.slice(3)]), ['RREF_LIMIT_EXCEEDED', 'RREF_LIMIT_EXCEEDED']);
  t.is(await a.rpcSync('w', releaseHeld, []), 3);
  t.deepEqual(await a.rpcSync('w', useAll, [refs.slice(3)]), ['ok', 'ok'], 'room again once released');
  await Promise.all(refs.map((r) => r.release()));
  await eventually(() => {
    globalThis.gc?.();
    return [a, w].every((x) => JSON.stringify(x.rrefStats()) === JSON.stringify(zero));
  }, 10_000).catch((e: Error) => {
    throw new Error(`${e.message}: a ${JSON.stringify(a.rrefStats())} w ${JSON.stringify(w.rrefStats())}`);
  });
  t.pass();
});

test.serial('peer resources - a value over its creator\'s byte bound is refused and freed', async (t) => {
  const { agents } = await natsGroup(['a', 'w'], { peerLimits: { rrefBytesPerPeer: 16_000 } });
  const [a, w] = agents as [RpcAgent, RpcAgent];
  const baseline = tf.memory().numTensors;
  const small = a.remote('w', tf.ones, [[1_000]]);
  await small.toHere().then((x) => x.dispose());
  const big = a.remote('w', tf.ones, [[10_000]]);
  const error = await t.throwsAsync(big.toHere(), { instanceOf: RRefError });
  t.is(error!.code, 'RREF_LIMIT_EXCEEDED');
  await big.release();
  await small.release();
  await eventually(() => JSON.stringify(w.rrefStats()) === JSON.stringify(zero) && JSON.stringify(a.rrefStats()) === JSON.stringify(zero));
  t.is(tf.memory().numTensors, baseline);
});

test.serial('peer resources - an unknown RRef id fails at once with RRefError and keeps no state', async (t) => {
  const { agents } = await natsGroup(['a', 'w']);
  const [a, w] = agents as [RpcAgent, RpcAgent];
  for (const [fn, args] of [
    ['tb.rref.fetch', ['a.nothing.1']],
    ['tb.rref.call', ['a.nothing.2', 'size', []]],
    ['tb.rref.create', ['a.nothing.3', 'a.fork.3', { target: 'a.nothing.4', method: 'size', args: [] }]],
  ] as const) {
    const start = Date.now();
    const error = await t.throwsAsync(a.rpcSync('w', fn, [...args]), { instanceOf: RRefError });
    t.is(error!.code, 'RREF_OWNER_LOST');
    t.true(since(start) < 1_000, `${fn} answered in ${since(start)} ms`);
  }
  const start = Date.now();
  const reply = (await hostOf(a).control.request('w', { k: 'rref.fork', rrefId: 'a.nothing.5', forkId: 'a.fork.5', holder: 'a', parent: 'a' }, 2_000)) as { error?: { code?: string } };
  t.is(reply.error?.code, 'RREF_OWNER_LOST');
  t.true(since(start) < 1_000, `a fork of an unknown id answered in ${since(start)} ms`);
  t.deepEqual(w.rrefStats(), zero);
});

test.serial('peer resources - tensors inside a class instance held by an RRef are disposed with it, its variables and dispose() included', async (t) => {
  const { agents } = await natsGroup(['a', 'w']);
  const [a, w] = agents as [RpcAgent, RpcAgent];
  const baseline = tf.memory().numTensors;
  const disposals = bagDisposals.count;
  const bag = a.remote('w', TensorBag, []);
  t.is(await bag.rpcSync().size(), 2);
  t.is(await bag.rpcSync().grow(5), 1, 'a tensor the instance stores later is its own too');
  t.true(tf.memory().numTensors > baseline);
  await bag.release();
  await eventually(() => JSON.stringify(w.rrefStats()) === JSON.stringify(zero));
  t.is(tf.memory().numTensors, baseline, 'every tensor of the instance was disposed');
  t.is(bagDisposals.count, disposals + 1, 'its dispose() ran once');
  // A variable given to agent.rref() is the caller's own: releasing the reference keeps it.
  const param = tf.tidy(() => tf.variable(tf.ones([3])));
  const ref = w.rref(param);
  await ref.release();
  t.false(param.isDisposed);
  param.dispose();
});

test.serial('peer resources - only tensor ops are callable as builtins', async (t) => {
  const { agents } = await natsGroup(['a', 'w']);
  const [a] = agents as [RpcAgent];
  const x = tf.ones([2]);
  const variables = tf.memory().numTensors;
  for (const name of ['tf.variable', 'tf.print', 'tf.dispose', 'tf.disposeVariables', 'tf.setBackend', 'tf.keep', 'tf.op', 'tf.deregisterOp', 'tf.train', 'tf.loadGraphModelSync']) {
    await t.throwsAsync(a.rpcSync('w', name, [x]), { instanceOf: UnknownFunctionError }, name);
  }
  t.is(tf.memory().numTensors, variables, 'no variable was made');
  x.dispose();
  await t.throwsAsync(a.rpcSync('w', tf.variable as never, []), { instanceOf: InvalidArgumentError }, 'the caller refuses it too');
  const one = tf.ones([2]);
  const sum = await a.rpcSync('w', tf.add, [one, one]);
  t.deepEqual([...(await sum.data())], [2, 2]);
  tf.dispose([sum, one]);
});

test.serial('peer resources - only methods of the value\'s own class are callable through an RRef', async (t) => {
  const { agents } = await natsGroup(['a', 'w']);
  const [a, w] = agents as [RpcAgent, RpcAgent];
  const bag = a.remote('w', TensorBag, []);
  t.is(await bag.rpcSync().size(), 2);
  for (const method of ['valueOf', 'toString', 'hasOwnProperty', 'toLocaleString', 'isPrototypeOf', '__proto__', '__defineGetter__', 'constructor', '_hidden', 'weight', 'list']) {
    await t.throwsAsync(a.rpcSync('w', 'tb.rref.call', [bag.rrefId, method, []]), { instanceOf: UnknownFunctionError }, method);
  }
  const tensorRef = a.remote('w', tf.ones, [[2]]);
  // A tensor's own methods run (PyTorch's test_rref_proxy_tensor); its lifetime, fields, getters and Object.prototype stay closed.
  t.deepEqual(await a.rpcSync('w', 'tb.rref.call', [tensorRef.rrefId, 'arraySync', []]), [1, 1]);
  for (const method of ['dispose', 'dataId', 'isDisposed', 'kept', 'valueOf', 'hasOwnProperty', '__proto__', 'constructor', '_hidden']) {
    await t.throwsAsync(a.rpcSync('w', 'tb.rref.call', [tensorRef.rrefId, method, []]), { instanceOf: UnknownFunctionError }, `tensor ${method}`);
  }
  const copy = await tensorRef.toHere();
  t.deepEqual([...(await copy.data())], [1, 1], 'the tensor is intact');
  copy.dispose();
  await Promise.all([bag.release(), tensorRef.release()]);
  await eventually(() => JSON.stringify(w.rrefStats()) === JSON.stringify(zero));
});

test.serial('peer resources - autograd contexts with made-up ids are bounded per peer and dropped after their lease', async (t) => {
  const { agents, outsider } = await natsGroup(['a', 'w'], { peerLimits: { autogradContextsPerPeer: 3, autogradBytesPerPeer: 64_000, leaseMs: 1_500 } });
  const [a, w] = agents as [RpcAgent, RpcAgent];
  const baseline = tf.memory().numTensors;
  const x = tf.ones([1_000]);
  const call = (client: CallClient, from: string, id: string) => client.call('w', 'tf.mul', [x, x], { from, ag: [id, `${id}.m`] }).then((y) => (y as tf.Tensor).dispose());
  // A caller that cannot show it is a member is served outside any context: it opens none, even claiming a member's name.
  for (let i = 0; i < 5; i++) await call(outsider, 'outsider', `outsider/made.${i}`);
  await call(outsider, 'a', 'a/made.1');
  t.is(w.distAutograd.size, 0, 'unverified callers open no context');
  // A member is bounded by count and by bytes, and a made-up creator does not keep a context alive.
  await call(hostOf(a).calls, 'a', 'ghost/made.0');
  await call(hostOf(a).calls, 'a', 'ghost/made.1');
  t.is(w.distAutograd.size, 2);
  const big = tf.ones([20_000]);
  const tooBig = await t.throwsAsync(hostOf(a).calls.call('w', 'tf.mul', [big, big], { from: 'a', ag: ['ghost/made.2', 'm'] }), { instanceOf: AutogradError });
  t.is(tooBig!.code, 'AUTOGRAD_LIMIT_EXCEEDED');
  big.dispose();
  t.is(w.distAutograd.size, 2, 'the refused call kept nothing');
  await call(hostOf(a).calls, 'a', 'ghost/made.3');
  t.is(w.distAutograd.size, 3);
  const refused = await t.throwsAsync(call(hostOf(a).calls, 'a', 'ghost/made.4'), { instanceOf: AutogradError });
  t.is(refused!.code, 'AUTOGRAD_LIMIT_EXCEEDED');
  t.is(w.distAutograd.size, 3, 'the refused call opened nothing');
  for (const carriers of [[5], [1, 0], [0, 0], [0, 1, 2], [-1], [0.5], 'all']) {
    await t.throwsAsync(hostOf(a).calls.call('w', 'tf.mul', [x, x], { from: 'a', ag: ['a/carriers.1', 'm', carriers] }), { instanceOf: SerializationError }, `carriers ${JSON.stringify(carriers)}`);
  }
  t.is(w.distAutograd.size, 3, 'calls with malformed gradient carriers opened nothing');
  t.true(tf.memory().numTensors > baseline + 1, 'the contexts hold tensors');
  await eventually(() => w.distAutograd.size === 0, 10_000);
  x.dispose();
  t.is(tf.memory().numTensors, baseline, 'their tensors were disposed');
});

test.serial('peer resources - a context release lost in a bus outage is retried until acknowledged', async (t) => {
  const { agents } = await natsGroup(['a', 'w'], { rpcTimeoutMs: 800 });
  const [a, w] = agents as [RpcAgent, RpcAgent];
  const baseline = tf.memory().numTensors;
  const v = tf.tidy(() => tf.variable(tf.ones([1_000])));
  await a.distAutograd.context(async () => {
    const y = await a.rpcSync('w', tf.mul, [v, v]);
    y.dispose();
    t.is(w.distAutograd.size, 1);
    blackholes.add('tb.call.w');
  });
  t.is(w.distAutograd.size, 1, 'the first release was lost');
  blackholes.delete('tb.call.w');
  await eventually(() => w.distAutograd.size === 0, 10_000);
  v.dispose();
  t.is(tf.memory().numTensors, baseline);
});

test.serial('peer resources - a lost gradient message fails backward after its timeoutMs with RpcTimeoutError', async (t) => {
  const { agents } = await natsGroup(['a', 'w'], { rpcTimeoutMs: 20_000 });
  const [a, w] = agents as [RpcAgent, RpcAgent];
  const baseline = tf.memory().numTensors;
  const v = tf.tidy(() => tf.variable(tf.ones([16])));
  await a.distAutograd.context(async (ctxId) => {
    const y = await a.rpcSync('w', tf.mul, [v, v]);
    const loss = tf.sum(y);
    blackholes.add('tb.call.w');
    const start = Date.now();
    await t.throwsAsync(a.distAutograd.backward(ctxId, [loss], { timeoutMs: 500 }), { instanceOf: RpcTimeoutError });
    t.true(since(start) < 3_000, `backward gave up after ${since(start)} ms`);
    blackholes.delete('tb.call.w');
    y.dispose();
    loss.dispose();
  });
  await eventually(() => w.distAutograd.size === 0 && a.distAutograd.size === 0, 10_000);
  v.dispose();
  await eventually(() => tf.memory().numTensors === baseline, 5_000).catch(() => undefined);
  t.is(tf.memory().numTensors, baseline);
});

test.serial('peer resources - an optimizer whose trainer goes without disposing it frees its slot variables, not the parameters', async (t) => {
  const { agents } = await natsGroup(['trainer', 'ps']);
  const [trainer, ps] = agents as [RpcAgent, RpcAgent];
  const wRef = trainer.remote('ps', makeVariable, [[[1, 2], [3, 4]]]) as RRef<tf.Variable>;
  (await wRef.toHere()).dispose();
  const [w] = [...(hostOf(ps).plugin(RREFS).owners.values())].map((e) => e.value as tf.Variable);
  const x = tf.tensor2d([[1, 1]]);
  const before = tf.memory().numTensors;
  const opt = await DistributedOptimizer.create(trainer, 'adam', [wRef], { learningRate: 0.1 });
  await trainer.distAutograd.context(async (ctxId) => {
    const y = await trainer.rpcSync('ps', linear, [wRef, x]);
    const loss = tf.sum(y);
    await trainer.distAutograd.backward(ctxId, [loss]);
    await opt.step(ctxId);
    tf.dispose([y, loss]);
  });
  t.true(tf.memory().numTensors > before, 'adam made its slot variables');
  await trainer.shutdown({ graceful: false });
  await eventually(() => {
    globalThis.gc?.();
    return ps.rrefStats().owners === 0;
  }, 10_000).catch((error: Error) => {
    throw new Error(`${error.message}: ${JSON.stringify(ps.rrefStats())}`);
  });
  t.is(tf.memory().numTensors, before, "the optimizer's slots were disposed");
  t.false(w!.isDisposed, 'the parameter it updated was not');
  x.dispose();
  w!.dispose();
});
