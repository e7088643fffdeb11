import test from 'ava';
import { RemoteError, RpcTimeoutError, RRefError, tf, UnknownFunctionError } from '@tensorbus/core';
import { RRef, type RpcAgent } from '../src/index.js';
import { addNumbers, Counter, echo, sleep, sleepsFinished } from './fixtures/functions.js';
import { confirmedInCallee, failToCreate, forwardChain, Holder, makeLocal, rrefAdd, rrefInfo, rrefValue, sumNested } from './fixtures/rref-functions.js';
import { eventually, rrefsReleased, startGroup, stopAll, transportKinds } from './helpers.js';
import { stopEverything } from './helpers.js';

test.after.always(stopEverything);

const zero = { owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 };

/** Waits until every worker's RRef counts are zero (without collecting garbage: lifetimes must not need it). */
const allReleased = (agents: RpcAgent[]) => rrefsReleased(agents);

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - rref - ${title}`;

  test(t('a local RRef without fork: owner, value, release'), async (tt) => {
    const agents = await startGroup(kind, ['a']);
    const [a] = agents;
    const r = a!.rref({ x: 1 });
    tt.true(r.isOwner());
    tt.true(r.confirmedByOwner());
    tt.is(r.ownerName(), 'a');
    tt.deepEqual(r.owner(), a!.self);
    tt.deepEqual(r.localValue(), { x: 1 });
    tt.deepEqual(await r.toHere(), { x: 1 });
    tt.is(a!.rrefStats().owners, 1);
    await r.release();
    await r.release();
    tt.deepEqual(a!.rrefStats(), zero);
    tt.throws(() => r.localValue(), { instanceOf: RRefError, code: 'RREF_RELEASED' } as never);
    await tt.throwsAsync(r.toHere(), { code: 'RREF_RELEASED' });
    await stopAll(agents);
  });

  test(t('releasing the last reference disposes its tensors but never a tf.Variable'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a] = agents;
    const param = tf.variable(tf.zeros([3]));
    const plain = tf.ones([3]);
    const refs = [a!.rref(param), a!.rref(plain)];
    // A user on another worker holds forks too: the owner drops the values after both are gone.
    await a!.rpcSync('b', rrefValue, [refs[0]]).then((v) => (v as tf.Tensor).dispose());
    for (const r of refs) await r.release();
    await allReleased(agents);
    tt.false(param.isDisposed, 'the parameter lives on');
    tt.true(plain.isDisposed, 'the plain tensor went with its RRef');
    param.dispose();
    await stopAll(agents);
  });

  test(t('remote() returns at once; the callee owns the value; toHere copies it'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a, b] = agents;
    const r = a!.remote('b', addNumbers, [2, 3]);
    tt.true(r instanceof RRef);
    tt.false(r.isOwner());
    tt.is(r.ownerName(), 'b');
    tt.is(await r.toHere(), 5);
    tt.true(r.confirmedByOwner());
    tt.is(b!.rrefStats().owners, 1);
    tt.is(a!.rrefStats().users, 1);
    tt.throws(() => r.localValue(), { instanceOf: RRefError, code: 'RREF_NOT_OWNER' } as never);
    const tensor = a!.remote('b', tf.add, [tf.ones([2]), tf.ones([2])]);
    tt.deepEqual([...(await (await tensor.toHere()).data())], [2, 2]);
    tt.deepEqual([...(await (await tensor.toHere()).data())], [2, 2], 'the owner keeps its value across fetches');
    await r.release();
    await tensor.release();
    await allReleased(agents);
    await stopAll(agents);
  });

  test(t('RRef to self, used by self and by a peer'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a, b] = agents;
    const self = a!.remote('a', addNumbers, [1, 1]);
    tt.true(self.isOwner());
    tt.is(await self.toHere(), 2);
    tt.is(self.localValue(), 2);
    const fromB = b!.remote('a', addNumbers, [3, 4]);
    tt.is(await b!.rpcSync('a', rrefValue, [fromB]), 7);
    tt.is(await a!.rpcSync('b', rrefValue, [self]), 2, 'a peer reads an RRef its owner passed');
    tt.deepEqual(await a!.rpcSync('a', rrefInfo, [self]), { owner: 'a', isOwner: true }, 'passed to its owner, it is the owner RRef');
    // The caller's own RRefs are its to release (passing them does not).
    await Promise.all([self.release(), fromB.release()]);
    await allReleased(agents);
    await stopAll(agents);
  });

  test(t('passing RRefs: owner to user, user to owner, user to user, nested anywhere'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c']);
    const [a] = agents;
    const local = a!.rref(10);
    tt.is(await a!.rpcSync('b', rrefValue, [local]), 10, 'owner to user');
    const onC = a!.remote('c', addNumbers, [20, 1]);
    tt.is(await a!.rpcSync('c', rrefValue, [onC]), 21, 'user to owner');
    tt.is(await a!.rpcSync('b', rrefValue, [onC]), 21, 'user to user');
    tt.deepEqual(await a!.rpcSync('b', rrefInfo, [onC]), { owner: 'c', isOwner: false });
    const five = a!.rref(5);
    const onB = a!.remote('b', addNumbers, [1, 0]);
    const total = await a!.rpcSync('b', sumNested, [{ list: [local, onC], map: new Map([['k', five]]), deep: { r: onB } }]);
    tt.is(total, 10 + 21 + 5 + 1);
    tt.is(await a!.rpcSync('b', confirmedInCallee, [onC]), true, 'confirmedByOwner() inside the callee');
    const t1 = a!.remote('b', tf.ones, [[2]]);
    const t2 = a!.remote('c', tf.ones, [[2]]);
    const sum = await a!.rpcSync('c', rrefAdd, [t1, t2]);
    tt.deepEqual([...(await sum.data())], [2, 2]);
    for (const r of [local, onC, t1, t2, five, onB]) await r.release();
    await allReleased(agents);
    await stopAll(agents);
  });

  test(t('an RRef returned from a call works for the caller; return chains of 8 hops'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c']);
    const [a] = agents;
    const made = await a!.rpcSync('b', makeLocal, [{ v: 42 }]);
    tt.is(made.ownerName(), 'b');
    tt.deepEqual(await made.toHere(), { v: 42 });
    const origin = a!.remote('c', echo, ['end of chain']);
    const back = await a!.rpcSync('b', forwardChain, [['a', 'b', 'c'], 8, origin]);
    tt.is(back.ownerName(), 'c');
    tt.is(await back.toHere(), 'end of chain');
    await Promise.all([made.release(), origin.release(), back.release()]);
    await allReleased(agents);
    await stopAll(agents);
  });

  test(t('proxies run methods on the owner, with reuse, async, remote and timeouts'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a] = agents;
    const counter = a!.remote('b', Counter, [10]);
    const sync = counter.rpcSync();
    tt.is(await sync.inc(5), 15);
    tt.is(await sync.inc(1), 16, 'a proxy can be reused');
    tt.is(await counter.rpcAsync().inc(4), 20);
    const n = counter.remote().inc(0);
    tt.is(n.ownerName(), 'b');
    tt.is(await n.toHere(), 20);
    const holder = a!.remote('b', Holder, []);
    tt.is(await holder.rpcSync().push('x'), 1);
    tt.deepEqual([...(await (await holder.rpcSync().scaled(2)).data())], [2, 4, 6]);
    tt.deepEqual([...(await (await holder.rpcSync().scaled(3)).data())], [3, 6, 9], 'the owner kept its tensor');
    const error = await tt.throwsAsync((holder as RRef<any>).rpcSync().nope(), { instanceOf: UnknownFunctionError });
    tt.regex(error!.message, /nope/);
    await tt.throwsAsync(holder.rpcSync({ timeoutMs: 50 }).slow(2_000), { instanceOf: RpcTimeoutError });
    const own = a!.rref(new (Holder as unknown as new () => { push(x: unknown): number })());
    tt.is(await own.rpcSync().push(1), 1, 'proxies work on owner RRefs too');
    await Promise.all([counter.release(), n.release(), holder.release(), own.release()]);
    await allReleased(agents);
    await stopAll(agents);
  });

  test.serial(t('proxies run a tensor\'s methods on its owner, from the owner and from a user, and leak nothing'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a, b] = agents;
    const baseline = tf.memory().numTensors;
    // PyTorch's test_rref_proxy_tensor: a user's RRef (owned by b) and an owner's RRef (b's own) to a tensor.
    const user = a!.remote('b', tf.ones, [[2, 2]]) as RRef<tf.Tensor>;
    const own = b!.rref(tf.tensor([1, 2, 3, 4]));
    for (const [who, rref] of [['user', user], ['owner', own]] as const) {
      const plusOne = await rref.rpcSync().add(1);
      tt.deepEqual(await plusOne.array(), who === 'user' ? [[2, 2], [2, 2]] : [2, 3, 4, 5], `${who}: rpcSync().add(1)`);
      plusOne.dispose();
      const reshaped = await rref.rpcSync().reshape([1, 4]);
      tt.deepEqual(reshaped.shape, [1, 4], `${who}: rpcSync().reshape`);
      reshaped.dispose();
      tt.deepEqual(await rref.rpcSync().arraySync(), who === 'user' ? [[1, 1], [1, 1]] : [1, 2, 3, 4], `${who}: rpcSync().arraySync()`);
      const plusThree = await rref.rpcAsync().add(3).wait();
      tt.deepEqual(await plusThree.data(), new Float32Array(who === 'user' ? [4, 4, 4, 4] : [4, 5, 6, 7]), `${who}: rpcAsync().add(3)`);
      plusThree.dispose();
      const view = rref.remote().reshape([1, 4]);
      tt.is(view.ownerName(), 'b');
      const viewed = await view.toHere();
      tt.deepEqual(viewed.shape, [1, 4], `${who}: remote().reshape`);
      // On the owner toHere() is the value itself (its RRef frees it); elsewhere a copy, the caller's to free.
      if (!view.isOwner()) viewed.dispose();
      tt.deepEqual(await view.rpcSync().arraySync(), who === 'user' ? [[1, 1, 1, 1]] : [[1, 2, 3, 4]], `${who}: the new RRef holds the reshaped tensor`);
      await view.release();
      await tt.throwsAsync((rref as RRef<any>).rpcSync().dispose(), { instanceOf: UnknownFunctionError }, `${who}: a caller cannot free the value`);
      await tt.throwsAsync(((rref as RRef<any>).rpcSync() as { hasOwnProperty(name: string): Promise<boolean> }).hasOwnProperty('shape'), { instanceOf: UnknownFunctionError }, `${who}: Object.prototype stays closed`);
    }
    tt.deepEqual(await user.rpcSync().arraySync(), [[1, 1], [1, 1]], 'the value is intact');
    await Promise.all([user.release(), own.release()]);
    await allReleased(agents);
    await eventually(() => tf.memory().numTensors === baseline);
    tt.is(tf.memory().numTensors, baseline, 'every tensor the methods made was freed');
    await stopAll(agents);
  });

  test(t('a failed creation surfaces at the next use; a timed-out one leaves nothing behind'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a, b] = agents;
    const failed = a!.remote('b', failToCreate, []);
    const error = await tt.throwsAsync(failed.toHere(), { instanceOf: RRefError });
    tt.is(error!.code, 'RREF_CREATION_FAILED');
    tt.true(error!.cause instanceof RemoteError);
    tt.regex(error!.message, /cannot make this/);
    await tt.throwsAsync((failed as RRef<any>).rpcSync().anything(), { code: 'RREF_CREATION_FAILED' });
    const unknown = a!.remote('b', 'no.such.function', []);
    await tt.throwsAsync(unknown.toHere(), { code: 'RREF_CREATION_FAILED' });
    const late = `late-${kind.name}`;
    const slow = a!.remote('b', sleep, [400, late], { timeoutMs: 50 });
    const timedOut = await tt.throwsAsync(slow.toHere(), { code: 'RREF_CREATION_FAILED' });
    tt.true(timedOut!.cause instanceof RpcTimeoutError);
    // Once the function has returned (however loaded the machine), its value must not stay.
    await eventually(() => sleepsFinished.has(late));
    await eventually(() => b!.rrefStats().owners === 0).catch(() => undefined);
    tt.is(b!.rrefStats().owners, 0, 'the value made after the timeout was dropped');
    await Promise.all([failed.release(), unknown.release(), slow.release()]);
    await allReleased(agents);
    await stopAll(agents);
  });

  test(t('await using releases; every worker returns to zero after many forks'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c']);
    const [a] = agents;
    {
      await using r = a!.remote('c', addNumbers, [1, 2]);
      tt.is(await r.toHere(), 3);
    }
    for (let i = 0; i < 30; i++) {
      const r = a!.remote(i % 2 ? 'b' : 'c', addNumbers, [i, 1]);
      tt.is(await a!.rpcSync('b', rrefValue, [r]), i + 1);
      await r.release();
    }
    await allReleased(agents);
    tt.pass();
    await stopAll(agents);
  });

  test(t('when an owner dies its RRefs fail with RREF_OWNER_LOST; when a user dies the owner drops its forks'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c'], { heartbeatMs: 100, failureTimeoutMs: 500 });
    const [a, b, c] = agents;
    const onB = a!.remote('b', addNumbers, [1, 1]);
    tt.is(await onB.toHere(), 2);
    const heldByC = c!.remote('a', addNumbers, [2, 2]);
    tt.is(await heldByC.toHere(), 4);
    tt.is(a!.rrefStats().owners, 1);
    await b!.shutdown({ graceful: false });
    await c!.shutdown({ graceful: false });
    await eventually(() => a!.workers().length === 1);
    await tt.throwsAsync(onB.toHere(), { code: 'RREF_OWNER_LOST' });
    await onB.release();
    await eventually(() => a!.rrefStats().owners === 0);
    tt.deepEqual(a!.rrefStats(), zero);
    await stopAll(agents);
  });
}
