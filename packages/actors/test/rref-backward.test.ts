/**
 * rref.backward() [RRef.backward] over every transport: the distributed
 * backward pass from the scalar an RRef holds, run on its owner, gives the
 * gradients tf.grads gives locally (dist_autograd_test.py test_backward_rref*).
 */
import test, { type ExecutionContext } from 'ava';
import { AutogradError, InvalidArgumentError, tf } from '@tensorbus/core';
import { remoteFunction, type RpcAgent, type RRef } from '../src/index.js';
import { assertClose, localGrads, variable } from './autograd-helpers.js';
import { gradientOf, makeVariable, mul, sumAll } from './fixtures/autograd-functions.js';
import { eventually, startGroup, stopAll, transportKinds, type TransportKind } from './helpers.js';

/** sum(x @ w) where w is the variable `wRef` holds on this worker: a scalar computed on the owner from its own variable. */
const sumLinear = remoteFunction('rb.sumLinear', async (wRef: RRef<tf.Variable>, x: tf.Tensor) => tf.sum(tf.matMul(x, await wRef.toHere())));

async function group(tt: ExecutionContext, kind: TransportKind, names: string[]): Promise<RpcAgent[]> {
  const agents = await startGroup(kind, names);
  tt.teardown(() => stopAll(agents));
  return agents;
}

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - rref backward - ${title}`;

  test(t('from a remote scalar loss, on its owner, gradients reach the caller\'s variables as tf.grads gives them'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer] = agents as [RpcAgent];
    const w = variable([4], 7);
    const [expected] = localGrads((v) => tf.sum(tf.mul(tf.mul(v, v), v)), [w]) as [tf.Tensor];
    await trainer.distAutograd.context(async (ctxId) => {
      const squared = tf.mul(w, w);
      const product = trainer.remote('ps', mul, [squared, w]);
      const loss = trainer.remote('ps', sumAll, [await product.toHere()]);
      tt.false(loss.isOwner());
      await loss.backward(ctxId, true);
      await assertClose(tt, trainer.distAutograd.getGradients(ctxId).get(w), expected, 'w after one backward');
      // The graph was retained: a second pass adds the same gradients (the context id defaults to the running one).
      await loss.backward();
      const doubled = tf.mul(expected, 2);
      await assertClose(tt, trainer.distAutograd.getGradients(ctxId).get(w), doubled, 'w after two backwards');
      // Without retainGraph the graph is used up.
      await tt.throwsAsync(loss.backward(ctxId), { instanceOf: AutogradError, message: /retainGraph/ });
      await Promise.all([product.release(), loss.release()]);
      doubled.dispose();
    });
    tf.dispose([w, expected]);
  });

  test(t('from a scalar computed on the owner from its own variable, and from an RRef this worker owns'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a] = agents as [RpcAgent];
    const wValues = [[0.5, -1], [2, 0.25], [1, 1]];
    const wRef = a.remote('b', makeVariable, [wValues]) as RRef<tf.Variable>;
    const x = tf.tensor2d([[1, 2, 3], [-1, 0.5, 4]]);
    const [expected] = localGrads((v) => tf.sum(tf.matMul(x, v)), [tf.tensor2d(wValues)]) as [tf.Tensor];
    await a.distAutograd.context(async (ctxId) => {
      const loss = a.remote('b', sumLinear, [wRef, x]) as RRef<tf.Tensor>;
      await loss.backward(ctxId);
      await assertClose(tt, await a.rpcSync('b', gradientOf, [ctxId, wRef]), expected, 'w on its owner');
      await loss.release();
    });
    // An RRef owned here: the pass starts here.
    const v = variable([3], 11);
    const [expectedV] = localGrads((u) => tf.sum(tf.square(u)), [v]) as [tf.Tensor];
    await a.distAutograd.context(async (ctxId) => {
      const own = a.rref(tf.sum(tf.square(v)));
      tt.true(own.isOwner());
      await own.backward(ctxId);
      await assertClose(tt, a.distAutograd.getGradients(ctxId).get(v), expectedV, 'v here');
      await own.release();
    });
    await wRef.release();
    tf.dispose([x, expected, v, expectedV]);
  });

  test(t('refuses a non-scalar value, and a call outside any context'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a, b] = agents as [RpcAgent, RpcAgent];
    const w = variable([3], 5);
    await a.distAutograd.context(async (ctxId) => {
      const vector = a.remote('b', mul, [w, w]);
      const error = await tt.throwsAsync(vector.backward(ctxId), { instanceOf: InvalidArgumentError });
      tt.regex(error!.message, /scalar float32/);
      await vector.release();
    });
    const scalar = a.remote('b', sumAll, [w]);
    await scalar.toHere().then((s) => s.dispose());
    const outside = await tt.throwsAsync(scalar.backward(), { instanceOf: AutogradError });
    tt.is(outside!.code, 'AUTOGRAD_CONTEXT_NOT_FOUND');
    // A peer naming a context its call does not carry reaches into nothing.
    const foreign = await tt.throwsAsync(a.rpcSync('b', 'tb.rref.backward', [(scalar as unknown as { rrefId: string }).rrefId, 'b/forged.1', false]), { instanceOf: AutogradError });
    tt.is(foreign!.code, 'AUTOGRAD_CONTEXT_NOT_FOUND');
    await scalar.release();
    await eventually(() => a.distAutograd.size === 0 && b.distAutograd.size === 0);
    w.dispose();
  });
}
