/**
 * Distributed autograd contexts over every transport: unique ids carried into
 * calls, release everywhere (also after a throw or a late call), nesting and
 * root checks, errors of a backward pass naming the worker, remote
 * getGradients, and contexts without any RPC.
 */
import test from 'ava';
import { AutogradError, InvalidArgumentError, tf } from '@tensorbus/core';
import type { RpcAgent, RRef } from '../src/index.js';
import { assertClose, localGrads, variable, group, allReleased } from './autograd-helpers.js';
import {
  add,
  chain,
  contextIdHere,
  contextsHere,
  gradientProbe,
  gradientsHere,
  linear,
  makeVariable,
  mul,
  setFailing,
  slowIdentity,
} from './fixtures/autograd-functions.js';
import { eventually, transportKinds } from './helpers.js';

// One at a time: run together over four kinds, the groups of these files (3 workers each, heartbeats every
// 100 ms) starved one test process until calls of every kind, in-process included, went 60 s unanswered.
for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - autograd - ${title}`;

  test.serial(t('contexts get unique ids, carry them into calls, and are released everywhere when the callback settles'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b', 'c']);
    const [a, b, c] = agents as [RpcAgent, RpcAgent, RpcAgent];
    const ids = new Set<string>();
    for (let i = 0; i < 5; i++) {
      await a.distAutograd.context(async (ctxId) => {
        ids.add(ctxId);
        tt.is(a.distAutograd.currentContextId(), ctxId);
        tt.is(await a.rpcSync('b', contextIdHere, []), ctxId, 'the callee runs in the caller context');
        // The callee joined this context. (The previous context's release may still be on its way over the bus, where it does not ride in order with the call.)
        tt.true(b.distAutograd.has(ctxId), 'the callee holds the context');
        tt.deepEqual(a.distAutograd.getGradients(ctxId), new Map());
      });
    }
    tt.is(ids.size, 5);
    tt.is(a.distAutograd.currentContextId(), undefined);
    tt.is(await a.rpcSync('b', contextIdHere, []), null, 'calls outside a context carry none');
    await allReleased(agents);
    tt.is(c.distAutograd.size, 0, 'a worker never reached holds nothing');
    const last = [...ids].pop()!;
    tt.throws(() => a.distAutograd.getGradients(last), { instanceOf: AutogradError, code: 'AUTOGRAD_CONTEXT_NOT_FOUND' } as never);
    await tt.throwsAsync(a.distAutograd.backward(last, [tf.scalar(1)]), { instanceOf: AutogradError, code: 'AUTOGRAD_CONTEXT_NOT_FOUND' });
    await tt.throwsAsync(a.distAutograd.backward('nope', [tf.scalar(1)]), { code: 'AUTOGRAD_CONTEXT_NOT_FOUND' });
  });

  test.serial(t('the context is released when the callback throws, and context() rejects with that error'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a] = agents as [RpcAgent];
    let id = '';
    await tt.throwsAsync(
      a.distAutograd.context(async (ctxId) => {
        id = ctxId;
        await a.rpcSync('b', add, [tf.ones([2]), tf.ones([2])]);
        throw new Error('boom');
      }),
      { message: 'boom' },
    );
    await allReleased(agents);
    tt.throws(() => a.distAutograd.getGradients(id), { code: 'AUTOGRAD_CONTEXT_NOT_FOUND' } as never);
  });

  test.serial(t('contexts do not nest; backward checks its roots'), async (tt) => {
    const agents = await group(tt, kind, ['a']);
    const [a] = agents as [RpcAgent];
    const w = variable([3], 1);
    await a.distAutograd.context(async (ctxId) => {
      await tt.throwsAsync(a.distAutograd.context(async () => undefined), { instanceOf: InvalidArgumentError });
      await tt.throwsAsync(a.distAutograd.backward(ctxId, []), { instanceOf: InvalidArgumentError });
      await tt.throwsAsync(a.distAutograd.backward(ctxId, [42 as never]), { instanceOf: InvalidArgumentError });
      const constant = tf.ones([2]);
      await tt.throwsAsync(a.distAutograd.backward(ctxId, [constant]), { instanceOf: InvalidArgumentError, message: /not computed in autograd context/ });
      const ints = tf.cast(tf.mul(w, 2), 'int32');
      await tt.throwsAsync(a.distAutograd.backward(ctxId, [ints]), { instanceOf: InvalidArgumentError, message: /float32/ });
      tf.dispose([constant, ints]);
    });
    w.dispose();
  });

  test.serial(t('an error on any worker fails backward naming it; the context then still works'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b', 'c']);
    const [a] = agents as [RpcAgent];
    const x = variable([3], 50);
    await a.distAutograd.context(async (ctxId) => {
      // a -> b (chain) -> c (gradientProbe): the error happens two hops away.
      const y = await a.rpcSync('b', mul, [x, x]);
      const z = await a.rpcSync('c', gradientProbe, [y]);
      const loss = tf.sum(z);
      await a.rpcSync('c', setFailing, [true]);
      for (let i = 0; i < 3; i++) {
        const error = await tt.throwsAsync(a.distAutograd.backward(ctxId, [loss], { retainGraph: true }), { instanceOf: AutogradError, code: 'AUTOGRAD_BACKWARD_FAILED' });
        tt.regex(error!.message, /worker 'c'/);
        tt.regex(error!.message, /simulated error in the backward pass on c/);
      }
      await a.rpcSync('c', setFailing, [false]);
      await a.distAutograd.backward(ctxId, [loss], { retainGraph: true });
      tt.true(a.distAutograd.getGradients(ctxId).has(x), 'backward works again in the same context');
    });
    await a.distAutograd.context(async (ctxId) => {
      // The failing op runs on the initiator itself (in a call to self).
      const z = await a.rpcSync('a', gradientProbe, [x]);
      await a.rpcSync('a', setFailing, [true]);
      const error = await tt.throwsAsync(a.distAutograd.backward(ctxId, [tf.sum(z)]), { code: 'AUTOGRAD_BACKWARD_FAILED' });
      tt.regex(error!.message, /worker 'a'/);
      await a.rpcSync('a', setFailing, [false]);
    });
    x.dispose();
  });

  test.serial(t('a participant that is gone fails backward at once, naming it'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b', 'c']);
    const [a, b, c] = agents as [RpcAgent, RpcAgent, RpcAgent];
    const x = variable([3], 60);
    await a.distAutograd.context(async (ctxId) => {
      const y = await a.rpcSync('b', chain, [['c'], x, x]);
      const loss = tf.sum(y);
      await c.shutdown({ graceful: false });
      // "At once" is: before any timeout could fire. A pass that waited on 'c' would end with the
      // backward's own RpcTimeoutError, not this error. (A wall-clock bound flaked on a loaded CI
      // machine, where the other tests of this file share the event loop.)
      const error = await tt.throwsAsync(a.distAutograd.backward(ctxId, [loss], { timeoutMs: 20_000 }), { instanceOf: AutogradError, code: 'AUTOGRAD_BACKWARD_FAILED' });
      tt.regex(error!.message, /'c'/);
    });
    await eventually(() => b.distAutograd.size === 0);
    x.dispose();
  });

  test.serial(t('a call still running when the context ends does not bring it back'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a, b] = agents as [RpcAgent, RpcAgent];
    const x = variable([2], 100);
    let late: Promise<tf.Tensor> | undefined;
    await a.distAutograd.context(async () => {
      await a.rpcSync('b', mul, [x, x]);
      late = a.rpcSync('b', slowIdentity, [x, 100]);
    });
    // Released on b in the background (as PyTorch does), before the late call ends.
    await eventually(() => b.distAutograd.size === 0);
    (await late!).dispose();
    tt.is(b.distAutograd.size, 0, 'the late call ran without a context');
    tt.is(await a.rpcSync('b', contextsHere, []), 0);
    x.dispose();
  });

  test.serial(t('getGradients on a remote worker, by context id, inside the context'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a] = agents as [RpcAgent];
    const wRef = a.remote('b', makeVariable, [[[1, 2], [3, 4]]]) as RRef<tf.Variable>;
    const x = tf.tensor2d([[1, 1]]);
    await a.distAutograd.context(async (ctxId) => {
      const y = await a.rpcSync('b', linear, [wRef, x]);
      await a.distAutograd.backward(ctxId, [tf.sum(y)]);
      const remote = (await a.rpcSync('b', gradientsHere, [ctxId])) as Record<string, tf.Tensor>;
      tt.is(Object.keys(remote).length, 1);
      await assertClose(tt, Object.values(remote)[0], tf.tensor2d([[1, 1], [1, 1]]), 'dw');
    });
    await wRef.release();
    x.dispose();
  });

  test.serial(t('tf.grad inside a context works, and so does the context'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a] = agents as [RpcAgent];
    const w = variable([3], 120);
    const [expected] = localGrads((v) => tf.sum(tf.mul(tf.square(v), tf.sin(v))), [w]) as [tf.Tensor];
    await a.distAutograd.context(async (ctxId) => {
      const local = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(tf.square(v), tf.sin(v))))(w);
      await assertClose(tt, local, expected, 'tf.grad inside the context');
      const squared = await a.rpcSync('b', mul, [w, w]);
      await a.distAutograd.backward(ctxId, [tf.sum(tf.mul(squared, tf.sin(w)))]);
      await assertClose(tt, a.distAutograd.getGradients(ctxId).get(w), expected, 'the context');
      local.dispose();
    });
    tf.dispose([w, expected]);
  });

  test.serial(t('ops that depend on no variable and no received tensor keep nothing'), async (tt) => {
    const agents = await group(tt, kind, ['a']);
    const [a] = agents as [RpcAgent];
    const data = tf.randomUniform([8, 8], -1, 1, 'float32', 140);
    await a.distAutograd.context(async () => {
      const before = tf.memory().numTensors;
      const out = tf.tidy(() => tf.sum(tf.relu(tf.matMul(data, tf.transpose(data)))));
      tt.is(tf.memory().numTensors, before + 1, 'only the result is alive');
      out.dispose();
    });
    data.dispose();
  });

  test.serial(t('a context without any RPC gives what tf.grads gives'), async (tt) => {
    const agents = await group(tt, kind, ['a']);
    const [a] = agents as [RpcAgent];
    const w = variable([2, 3], 150);
    const x = tf.tensor2d([[1, 2], [3, 4]]);
    const [expected] = localGrads((v) => tf.sum(tf.softmax(tf.matMul(x, v))), [w]) as [tf.Tensor];
    await a.distAutograd.context(async (ctxId) => {
      await a.distAutograd.backward(ctxId, [tf.sum(tf.softmax(tf.matMul(x, w)))]);
      await assertClose(tt, a.distAutograd.getGradients(ctxId).get(w), expected, 'w');
      tt.deepEqual(a.distAutograd.knownWorkers(ctxId), []);
    });
    tf.dispose([w, x, expected]);
  });
}
