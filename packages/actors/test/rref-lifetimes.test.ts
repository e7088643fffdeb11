/**
 * RRef lifetimes that do not wait for the garbage collector, over every
 * transport: RRefs a call receives are released when it settles unless the
 * function keeps them (keep(), fork()); RRefs a call returns belong to the
 * caller; release() and the dispose() of RemoteModule and
 * DistributedOptimizer bring every worker's rrefStats() back to zeros.
 * No test here collects garbage.
 */
import test from 'ava';
import { lastValueFrom, toArray } from 'rxjs';
import { RemoteError, RRefError, tf } from '@tensorbus/core';
import { DistributedOptimizer, RemoteModule, type RpcAgent } from '../src/index.js';
import { Linear } from './fixtures/autograd-functions.js';
import { addNumbers } from './fixtures/functions.js';
import { keepArgument, keptValues, makeAndReturn, releaseKept, rrefValue, streamFromRRef, sumNested, useThenFail } from './fixtures/rref-functions.js';
import { eventually, NO_RREFS, rrefsReleased, startGroup, stopAll, stopEverything, transportKinds } from './helpers.js';

test.after.always(stopEverything);

/** Failure detection with slack for a loaded machine: these tests are about RRefs, not about failures. */
const SLACK = { failureTimeoutMs: 5_000 };

/** `agent`'s counts, as a plain object. */
const stats = (agent: RpcAgent) => ({ ...agent.rrefStats() });

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - rref lifetimes - ${title}`;

  test(t('RRefs that arrive as arguments are released when the call settles, nested or not, on success or failure'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c'], SLACK);
    const [a, b, c] = agents as [RpcAgent, RpcAgent, RpcAgent];
    const onC = a.remote('c', addNumbers, [20, 1]);
    const local = a.rref(5);
    tt.is(await a.rpcSync('b', rrefValue, [onC]), 21);
    // The callee let go of its fork when the call settled; only the caller's references remain.
    await eventually(() => b.rrefStats().users === 0 && c.rrefStats().pendingUsers === 0 && a.rrefStats().pendingChildren === 0);
    tt.deepEqual(stats(b), NO_RREFS, 'the callee holds nothing after the call');
    tt.is(c.rrefStats().owners, 1, 'the caller still holds the value');
    const seven = a.rref(7);
    const onB = a.remote('b', addNumbers, [1, 0]);
    tt.is(await a.rpcSync('b', sumNested, [{ list: [local, onC], map: new Map([['k', seven]]), deep: { r: onB } }]), 5 + 21 + 7 + 1);
    // b owns onB: its owner handle from the call went, the caller's fork keeps the value.
    await eventually(() => b.rrefStats().users === 0 && b.rrefStats().owners === 1);
    tt.deepEqual(stats(b), { ...NO_RREFS, owners: 1 });
    await Promise.all([seven.release(), onB.release()]);
    await tt.throwsAsync(a.rpcSync('b', useThenFail, [onC]), { instanceOf: RemoteError, message: /failing after use/ });
    tt.is(await a.rpcSync('c', rrefValue, [onC]), 21, 'passed back to its owner');
    // onB's delete reaches its owner b in the background (release() does not wait for it, as in PyTorch).
    await eventually(() => b.rrefStats().users === 0 && b.rrefStats().owners === 0 && c.rrefStats().owners === 1 && a.rrefStats().owners === 1);
    tt.deepEqual(stats(b), NO_RREFS);
    await Promise.all([onC.release(), local.release()]);
    await rrefsReleased(agents);
    tt.pass();
    await stopAll(agents);
  });

  test(t('a stream starts once its RRef arguments are usable, and lets go of them when it ends or is cancelled'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c'], SLACK);
    const [a, b, c] = agents as [RpcAgent, RpcAgent, RpcAgent];
    const onC = a.remote('c', addNumbers, [20, 1]);
    // Ran to its end: confirmed at start, released after.
    tt.deepEqual(await lastValueFrom(a.rpcStream<number>('b', streamFromRRef, [onC, 3]).pipe(toArray())), [1, 21, 21, 21]);
    await eventually(() => b.rrefStats().users === 0 && c.rrefStats().pendingUsers === 0);
    tt.deepEqual(stats(b), NO_RREFS, 'the producer holds nothing after its stream ended');
    // Left early: the producer is cancelled, and its arguments go too.
    for await (const first of a.rpcStream<number>('b', streamFromRRef, [onC, 1_000_000], { credit: 2 })) {
      tt.is(first, 1);
      break;
    }
    await eventually(() => b.rrefStats().users === 0 && c.rrefStats().pendingUsers === 0);
    tt.deepEqual(stats(b), NO_RREFS, 'the producer holds nothing after its stream was cancelled');
    tt.is(c.rrefStats().owners, 1, 'the caller still holds the value');
    await onC.release();
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  test(t('a function keeps an RRef argument with keep(), or a handle of its own with fork()'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c'], SLACK);
    const [a, b] = agents as [RpcAgent, RpcAgent];
    const tag = `kept-${kind.name}`;
    const onC = a.remote('c', addNumbers, [1, 2]);
    const local = a.rref('mine');
    tt.is(await a.rpcSync('b', keepArgument, [tag, 'keep', onC]), 1);
    tt.is(await a.rpcSync('b', keepArgument, [tag, 'fork', local]), 2);
    await Promise.all([onC.release(), local.release()]);
    // The caller let go; the callee's kept references still hold the values.
    tt.deepEqual(await a.rpcSync('b', keptValues, [tag]), [3, 'mine']);
    tt.is(b.rrefStats().users, 2);
    tt.is(await a.rpcSync('b', releaseKept, [tag]), 2);
    await rrefsReleased(agents);
    // fork() on the owner: the original handle can go, the fork keeps the value.
    const own = a.rref({ v: 1 });
    const second = own.fork();
    tt.true(second.kept);
    await own.release();
    tt.deepEqual(await second.toHere(), { v: 1 });
    tt.throws(() => own.keep(), { instanceOf: RRefError, code: 'RREF_RELEASED' } as never);
    await second.release();
    tt.deepEqual(stats(a), NO_RREFS);
    await stopAll(agents);
  });

  test(t('RRefs in a result belong to the caller: the callee keeps no handle on what it returned'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a] = agents as [RpcAgent];
    const [, b] = agents as [RpcAgent, RpcAgent];
    for (let i = 0; i < 5; i++) {
      const made = await a.rpcSync('b', makeAndReturn, [{ i }]);
      tt.deepEqual(await made.toHere(), { i });
      await made.release();
      // The caller's fork is gone at once; the owner drops the value when the delete (sent in the background, as
      // PyTorch's) arrives, not when a garbage collector runs: the callee's handle went when its reply was sent.
      tt.deepEqual(stats(a), NO_RREFS, `call ${i}: the caller`);
      await eventually(() => JSON.stringify(stats(b)) === JSON.stringify(NO_RREFS));
    }
    await stopAll(agents);
  });

  // Serial: it counts the process's tensors, which the other tests of this file change.
  test.serial(t('RemoteModule.dispose(), DistributedOptimizer.dispose() and release() bring every worker to zero'), async (tt) => {
    const agents = await startGroup(kind, ['trainer', 'ps'], SLACK);
    const [trainer, ps] = agents as [RpcAgent, RpcAgent];
    const baseline = tf.memory().numTensors;
    const module = await RemoteModule.create(trainer, 'ps', Linear, [3, 2]);
    const params = await module.remoteParameters();
    const opt = await DistributedOptimizer.create(trainer, 'adam', params, { learningRate: 0.1 });
    const x = tf.tensor2d([[1, -2, 3]]);
    await trainer.distAutograd.context(async (ctxId) => {
      const y = await module.forward(x);
      const loss = tf.sum(y);
      await trainer.distAutograd.backward(ctxId, [loss]);
      await opt.step(ctxId);
      tf.dispose([y, loss]);
    });
    x.dispose();
    await opt.dispose();
    await Promise.all(params.map((p) => p.release()));
    await module.dispose();
    // The trainer's forks are gone at once; the deletes reach the owner in the background, and nothing waits for
    // the garbage collector.
    tt.deepEqual(stats(trainer), NO_RREFS);
    await eventually(() => JSON.stringify(stats(ps)) === JSON.stringify(NO_RREFS));
    // Both workers are in this process: their tensors are back to where they were.
    await eventually(() => tf.memory().numTensors === baseline).catch(() => undefined);
    tt.is(tf.memory().numTensors, baseline, 'no tensor left behind');
    await stopAll(agents);
  });
}
