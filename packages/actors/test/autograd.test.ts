/**
 * Distributed autograd gradients over every transport: gradients equal
 * tf.grads for the cases of PyTorch's dist_autograd_test.py (remote ops, self
 * calls, round trips, nested chains, multiple roots, retainGraph, RRef-held
 * variables, concurrent trainers and contexts, futures).
 */
import test from 'ava';
import { AutogradError, RpcFuture, tf } from '@tensorbus/core';
import type { RpcAgent, RRef } from '../src/index.js';
import { assertClose, localGrads, variable, group, allReleased } from './autograd-helpers.js';
import {
  add,
  chain,
  chainLocal,
  dropShared,
  echo,
  embed,
  embedLocal,
  gradientOf,
  linear,
  makeVariable,
  mul,
  sharedVariable,
  stack,
  sumAll,
  twoOutputs,
} from './fixtures/autograd-functions.js';
import { transportKinds } from './helpers.js';

// One at a time: run together over four kinds, the groups of these files (3 workers each, heartbeats every
// 100 ms) starved one test process until calls of every kind, in-process included, went 60 s unanswered.
for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - autograd - ${title}`;

  test.serial(t('simple: a remote op between local variables and a local loss'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a] = agents as [RpcAgent];
    const t1 = variable([3, 3], 1);
    const t2 = variable([3, 3], 2);
    const t4 = variable([3, 3], 3);
    const f = (x1: tf.Tensor, x2: tf.Tensor, x4: tf.Tensor) => tf.sum(tf.mul(tf.add(x1, x2), x4));
    const expected = localGrads(f, [t1, t2, t4]);
    await a.distAutograd.context(async (ctxId) => {
      const t3 = await a.rpcSync('b', add, [t1, t2]);
      const loss = tf.sum(tf.mul(t3, t4));
      await a.distAutograd.backward(ctxId, [loss]);
      const grads = a.distAutograd.getGradients(ctxId);
      tt.is(grads.size, 3);
      await assertClose(tt, grads.get(t1), expected[0]!, 't1');
      await assertClose(tt, grads.get(t2), expected[1]!, 't2');
      await assertClose(tt, grads.get(t4), expected[2]!, 't4');
      tt.deepEqual([...(await t1.data())], [...(await variable([3, 3], 1).data())], 'variables are not changed');
    });
    const [m1, m2] = localGrads((x1, x2) => tf.sum(tf.matMul(x1, x2)), [t1, t2]) as [tf.Tensor, tf.Tensor];
    await a.distAutograd.context(async (ctxId) => {
      const product = (await a.rpcSync('b', tf.matMul, [t1, t2])) as tf.Tensor;
      await a.distAutograd.backward(ctxId, [tf.sum(product)]);
      await assertClose(tt, a.distAutograd.getGradients(ctxId).get(t1), m1, 'a TensorFlow.js op called remotely: t1');
      await assertClose(tt, a.distAutograd.getGradients(ctxId).get(t2), m2, 'a TensorFlow.js op called remotely: t2');
    });
    tf.dispose([m1, m2]);
    tf.dispose([t1, t2, t4, ...expected]);
  });

  test.serial(t('to self, and a tensor sent back unchanged'), async (tt) => {
    const agents = await group(tt, kind, ['a']);
    const [a] = agents as [RpcAgent];
    const t1 = variable([4], 4);
    const t2 = variable([4], 5);
    const f = (x1: tf.Tensor, x2: tf.Tensor) => tf.sum(tf.square(tf.mul(tf.mul(x1, x2), x1)));
    const expected = localGrads(f, [t1, t2]);
    await a.distAutograd.context(async (ctxId) => {
      const product = await a.rpcSync('a', mul, [t1, t2]);
      const same = (await a.rpcSync('a', echo, [[product, t1]])) as tf.Tensor[];
      const loss = tf.sum(tf.square(tf.mul(same[0]!, same[1]!)));
      await a.distAutograd.backward(ctxId, [loss]);
      const grads = a.distAutograd.getGradients(ctxId);
      await assertClose(tt, grads.get(t1), expected[0]!, 't1');
      await assertClose(tt, grads.get(t2), expected[1]!, 't2');
    });
    tf.dispose([t1, t2, ...expected]);
  });

  test.serial(t('multiple round trips, with local ops in between and a remote loss'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b', 'c']);
    const [a] = agents as [RpcAgent];
    const ts = [1, 2, 3, 4, 5].map((seed) => variable([3, 3], seed + 10));
    const f = (t1: tf.Tensor, t2: tf.Tensor, t3: tf.Tensor, t4: tf.Tensor, t5: tf.Tensor) => {
      const v1 = tf.add(t1, t2);
      const v2 = tf.mul(t3, v1);
      const s = tf.stack([t4, v2]);
      const v3 = tf.matMul(tf.sigmoid(tf.sum(s, 0)), t5);
      return tf.sum(v3);
    };
    const expected = localGrads(f, ts);
    await a.distAutograd.context(async (ctxId) => {
      const [t1, t2, t3, t4, t5] = ts as [tf.Variable, tf.Variable, tf.Variable, tf.Variable, tf.Variable];
      const v1 = await a.rpcSync('b', add, [t1, t2]);
      const v2 = await a.rpcSync('c', mul, [t3, v1]);
      const s = await a.rpcSync('b', stack, [[t4, v2]]);
      const v3 = tf.matMul(tf.sigmoid(tf.sum(s, 0)), t5);
      const loss = await a.rpcSync('c', sumAll, [v3]);
      await a.distAutograd.backward(ctxId, [loss]);
      const grads = a.distAutograd.getGradients(ctxId);
      for (let i = 0; i < ts.length; i++) await assertClose(tt, grads.get(ts[i]!), expected[i]!, `t${i + 1}`);
    });
    tf.dispose([...ts, ...expected]);
    await allReleased(agents);
  });

  test.serial(t('nested 0→1→2→0 and deeper chains, awaited or not'), async (tt) => {
    const agents = await group(tt, kind, ['w0', 'w1', 'w2']);
    const [w0] = agents as [RpcAgent];
    const x = variable([5], 20);
    const w = variable([5], 21);
    const hops = ['w2', 'w0', 'w1', 'w2'];
    const expected = localGrads((x1, w1) => tf.add(tf.sum(chainLocal(2, x1, w1)), tf.sum(chainLocal(hops.length, x1, w1))), [x, w]);
    await w0.distAutograd.context(async (ctxId) => {
      const pending = w0.rpcAsync('w1', chain, [['w2', 'w0'], x, w]); // not awaited yet
      const deep = await w0.rpcSync('w1', chain, [hops, x, w]);
      const short = await pending;
      const loss = tf.add(tf.sum(short), tf.sum(deep));
      await w0.distAutograd.backward(ctxId, [loss]);
      const grads = w0.distAutograd.getGradients(ctxId);
      await assertClose(tt, grads.get(x), expected[0]!, 'x');
      await assertClose(tt, grads.get(w), expected[1]!, 'w');
      tt.true(agents.every((agent) => agent.distAutograd.size === 1), 'every hop joined the context');
    });
    await allReleased(agents);
    tf.dispose([x, w, ...expected]);
  });

  test.serial(t('multiple roots, unused tensors and multiple outputs'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a] = agents as [RpcAgent];
    const [t1, t2, t3, unused] = [30, 31, 32, 33].map((seed) => variable([3], seed)) as [tf.Variable, tf.Variable, tf.Variable, tf.Variable];
    const expected = localGrads(
      (x1, x2, x3) => {
        const s = tf.stack([x1, x2, x3]);
        const rows = tf.unstack(s);
        const root1 = tf.sum(tf.mul(rows[0]!, rows[1]!));
        const root2 = tf.sum(tf.add(tf.mul(x1, x3), tf.sub(x1, x3)));
        return tf.add(root1, root2);
      },
      [t1, t2, t3],
    );
    await a.distAutograd.context(async (ctxId) => {
      const s = await a.rpcSync('b', stack, [[t1, t2, t3]]);
      const rows = tf.unstack(s);
      const root1 = tf.sum(tf.mul(rows[0]!, rows[1]!));
      const out = await a.rpcSync('b', twoOutputs, [t1, t3]);
      const root2 = tf.sum(tf.add(out.product, out.rest[0] as tf.Tensor));
      await a.rpcSync('b', mul, [unused, unused]);
      await a.distAutograd.backward(ctxId, [root1, root2]);
      const grads = a.distAutograd.getGradients(ctxId);
      await assertClose(tt, grads.get(t1), expected[0]!, 't1');
      await assertClose(tt, grads.get(t2), expected[1]!, 't2');
      await assertClose(tt, grads.get(t3), expected[2]!, 't3 (used through the unused third row of the stack too)');
      tt.false(grads.has(unused), 'a variable whose result is unused has no gradient');
    });
    tf.dispose([t1, t2, t3, unused, ...expected]);
  });

  test.serial(t('repeated backward with retainGraph accumulates; without it the graph is used up'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a] = agents as [RpcAgent];
    const t1 = variable([2, 2], 40);
    const t2 = variable([2, 2], 41);
    const [g1, g2] = localGrads((x1, x2) => tf.sum(tf.mul(tf.add(x1, x2), x1)), [t1, t2]) as [tf.Tensor, tf.Tensor];
    await a.distAutograd.context(async (ctxId) => {
      const loss = tf.sum(tf.mul(await a.rpcSync('b', add, [t1, t2]), t1));
      await a.distAutograd.backward(ctxId, [loss], { retainGraph: true });
      await a.distAutograd.backward(ctxId, [loss], { retainGraph: true });
      await a.distAutograd.backward(ctxId, [loss]);
      const grads = a.distAutograd.getGradients(ctxId);
      await assertClose(tt, grads.get(t1), tf.mul(g1, 3), 't1 x3');
      await assertClose(tt, grads.get(t2), tf.mul(g2, 3), 't2 x3');
      await tt.throwsAsync(a.distAutograd.backward(ctxId, [loss]), { instanceOf: AutogradError, code: 'AUTOGRAD_BACKWARD_FAILED', message: /retainGraph/ });
    });
    tf.dispose([t1, t2, g1, g2]);
  });

  test.serial(t('RRef-held variables: used by their owner in calls, and fetched with toHere()'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer] = agents as [RpcAgent];
    const wValues = [[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]];
    const vValues = [[0.7], [-0.8]];
    const wRef = trainer.remote('ps', makeVariable, [wValues]) as RRef<tf.Variable>;
    const vRef = trainer.remote('ps', makeVariable, [vValues]) as RRef<tf.Variable>;
    const x = tf.tensor2d([[1, 2, 3], [4, 5, 6]]);
    const [gw, gv] = localGrads((w, v) => tf.sum(tf.square(tf.matMul(tf.tanh(tf.matMul(x, w)), v))), [tf.tensor2d(wValues), tf.tensor2d(vValues)]) as [
      tf.Tensor,
      tf.Tensor,
    ];
    await trainer.distAutograd.context(async (ctxId) => {
      const h = tf.tanh(await trainer.rpcSync('ps', linear, [wRef, x]));
      const v = await vRef.toHere();
      const loss = tf.sum(tf.square(tf.matMul(h, v)));
      await trainer.distAutograd.backward(ctxId, [loss]);
      await assertClose(tt, await trainer.rpcSync('ps', gradientOf, [ctxId, wRef]), gw, 'w on its owner');
      await assertClose(tt, await trainer.rpcSync('ps', gradientOf, [ctxId, vRef]), gv, 'v on its owner, through toHere()');
      tt.is(trainer.distAutograd.getGradients(ctxId).size, 0, 'the trainer has no variables');
    });
    await wRef.release();
    await vRef.release();
    tf.dispose([x, gw, gv]);
  });

  test.serial(t('three trainers against one parameter server at once keep their gradients apart'), async (tt) => {
    const agents = await group(tt, kind, ['ps', 't0', 't1', 't2']);
    const [ps, ...trainers] = agents as [RpcAgent, RpcAgent, RpcAgent, RpcAgent];
    const values = (await tf.randomUniform([10, 4], -1, 1, 'float32', 70).array()) as number[][];
    const table = tf.tensor2d(values);
    await Promise.all(
      trainers.map(async (trainer, i) => {
        const ids = tf.tensor1d([i, i + 3, i + 3, 9 - i], 'int32');
        const local = variable([4, 2], 80 + i);
        const [gTable, gLocal] = localGrads((e, l) => tf.sum(tf.sigmoid(tf.matMul(embedLocal(e, ids), l))), [table, local]) as [tf.Tensor, tf.Tensor];
        const tableRef = (await trainer.rpcSync('ps', sharedVariable, ['table', values])) as RRef<tf.Variable>;
        for (let round = 0; round < 3; round++) {
          await trainer.distAutograd.context(async (ctxId) => {
            const rows = await trainer.rpcSync('ps', embed, [tableRef, ids]);
            await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
            const loss = tf.sum(tf.sigmoid(tf.matMul(rows, local)));
            await trainer.distAutograd.backward(ctxId, [loss]);
            await assertClose(tt, trainer.distAutograd.getGradients(ctxId).get(local), gLocal, `trainer ${i} local`);
            await assertClose(tt, await trainer.rpcSync('ps', gradientOf, [ctxId, tableRef]), gTable, `trainer ${i}: table, on the ps`);
            tt.is(ps.distAutograd.size > 0, true);
          });
        }
        await tableRef.release();
        tf.dispose([ids, local, gTable, gLocal]);
      }),
    );
    await allReleased(agents);
    await ps.rpcSync('ps', dropShared, ['table']);
    table.dispose();
  });

  test.serial(t('several contexts of one worker at once, and an RNN: remote embedding, local LSTM, remote decoder'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer] = agents as [RpcAgent];
    const ntoken = 12;
    const dim = 4;
    const tableRef = trainer.remote('ps', makeVariable, [(await tf.randomUniform([ntoken, dim], -1, 1, 'float32', 90).array()) as number[][]]) as RRef<tf.Variable>;
    const decoderRef = trainer.remote('ps', makeVariable, [(await tf.randomUniform([5, ntoken], -1, 1, 'float32', 91).array()) as number[][]]) as RRef<tf.Variable>;
    const lstm = tf.layers.lstm({ units: 5, returnSequences: false, kernelInitializer: tf.initializers.glorotUniform({ seed: 92 }), recurrentInitializer: tf.initializers.orthogonal({ seed: 93 }) });
    const table = (await tableRef.toHere()) as tf.Tensor;
    const decoder = (await decoderRef.toHere()) as tf.Tensor;
    const sentences = [
      [1, 4, 7],
      [2, 2, 11],
    ];
    const forwardLocal = (e: tf.Tensor, d: tf.Tensor, ids: tf.Tensor, labels: tf.Tensor) => {
      const emb = tf.expandDims(embedLocal(e, ids), 0) as tf.Tensor3D;
      const h = lstm.apply(emb) as tf.Tensor;
      return tf.losses.softmaxCrossEntropy(labels, tf.matMul(h, d));
    };
    tf.tidy(() => lstm.apply(tf.zeros([1, 3, dim])) as tf.Tensor);
    const lstmWeights = lstm.trainableWeights.map((w) => w.read() as tf.Variable);
    await Promise.all(
      sentences.map(async (sentence, i) => {
        const ids = tf.tensor1d(sentence, 'int32');
        const labels = tf.oneHot(tf.tensor1d([sentence[2]!], 'int32'), ntoken);
        const expected = tf.grads((e, d, ...ws) => {
          void ws;
          return forwardLocal(e, d, ids, labels);
        })([table, decoder, ...lstmWeights]);
        await trainer.distAutograd.context(async (ctxId) => {
          const rows = await trainer.rpcSync('ps', embed, [tableRef, ids]);
          const h = lstm.apply(tf.expandDims(rows, 0)) as tf.Tensor;
          const logits = await trainer.rpcSync('ps', linear, [decoderRef, h]);
          const loss = tf.losses.softmaxCrossEntropy(labels, logits);
          await trainer.distAutograd.backward(ctxId, [loss]);
          await assertClose(tt, await trainer.rpcSync('ps', gradientOf, [ctxId, tableRef]), expected[0]!, `sentence ${i}: embedding`);
          await assertClose(tt, await trainer.rpcSync('ps', gradientOf, [ctxId, decoderRef]), expected[1]!, `sentence ${i}: decoder`);
          const grads = trainer.distAutograd.getGradients(ctxId);
          tt.is(grads.size, lstmWeights.length);
          for (let k = 0; k < lstmWeights.length; k++) await assertClose(tt, grads.get(lstmWeights[k]!), expected[k + 2]!, `sentence ${i}: lstm weight ${k}`);
        });
        tf.dispose([ids, labels, ...expected]);
      }),
    );
    await tableRef.release();
    await decoderRef.release();
    tf.dispose([table, decoder]);
    lstm.dispose();
  });

  test.serial(t('backward uses the values the ops saw, even if a variable is assigned in between'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b']);
    const [a] = agents as [RpcAgent];
    const w = variable([4], 130);
    const old = w.clone();
    const [expected] = localGrads((v) => tf.sum(tf.mul(tf.square(v), v)), [old]) as [tf.Tensor];
    await a.distAutograd.context(async (ctxId) => {
      const squared = await a.rpcSync('b', mul, [w, w]);
      const loss = tf.sum(tf.mul(squared, w));
      w.assign(tf.zeros([4]));
      await a.distAutograd.backward(ctxId, [loss]);
      await assertClose(tt, a.distAutograd.getGradients(ctxId).get(w), expected, 'gradient at the old value');
    });
    tf.dispose([w, old, expected]);
  });

  test.serial(t('remote() and toHere() inside a context carry gradients back through the creation'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b', 'c']);
    const [a, b] = agents as [RpcAgent, RpcAgent];
    const w = variable([3], 160);
    const [expected] = localGrads((v) => tf.sum(tf.mul(tf.mul(v, v), tf.add(v, v))), [w]) as [tf.Tensor];
    await a.distAutograd.context(async (ctxId) => {
      const product = a.remote('b', mul, [w, w]);
      const total = a.remote('c', add, [w, w]);
      const loss = tf.sum(tf.mul(await product.toHere(), await total.toHere()));
      await a.distAutograd.backward(ctxId, [loss]);
      await assertClose(tt, a.distAutograd.getGradients(ctxId).get(w), expected, 'w');
      tt.deepEqual(a.distAutograd.knownWorkers(ctxId), ['b', 'c']);
      tt.deepEqual(b.distAutograd.knownWorkers(ctxId), ['a']);
      await Promise.all([product.release(), total.release()]);
    });
    tf.dispose([w, expected]);
  });

  test.serial(t('futures in a context: RpcFuture.all of calls to several workers'), async (tt) => {
    const agents = await group(tt, kind, ['a', 'b', 'c']);
    const [a] = agents as [RpcAgent];
    const x = variable([3], 110);
    const [expected] = localGrads((v) => tf.sum(tf.mul(tf.add(v, v), tf.mul(v, v))), [x]) as [tf.Tensor];
    await a.distAutograd.context(async (ctxId) => {
      const [s, p] = await RpcFuture.all([a.rpcAsync('b', add, [x, x]), a.rpcAsync('c', mul, [x, x])]);
      await a.distAutograd.backward(ctxId, [tf.sum(tf.mul(s, p))]);
      await assertClose(tt, a.distAutograd.getGradients(ctxId).get(x), expected, 'x');
    });
    tf.dispose([x, expected]);
  });
}
