/**
 * Distributed autograd leaves nothing behind: after 1,000 contexts (remote
 * module forward, nested calls back to the initiator, backward, optimizer
 * step) every worker holds no context and as many tensors as before. Serial,
 * and in its own file: tensor counts are per process.
 */
import test from 'ava';
import { tf } from '@tensorbus/core';
import { DistributedOptimizer, RemoteModule, type RpcAgent } from '../src/index.js';
import { openContextCount } from '../src/internal.js';
import { chain, Linear } from './fixtures/autograd-functions.js';
import { eventually, startGroup, stopAll, transportKinds } from './helpers.js';

const CONTEXTS = 1_000;

for (const kind of transportKinds()) {
  test.serial(`${kind.name} - autograd memory - tensors return to baseline on every worker after ${CONTEXTS} contexts`, async (t) => {
    const agents = await startGroup(kind, ['trainer', 'ps', 'relay']);
    t.teardown(() => stopAll(agents));
    const [trainer] = agents as [RpcAgent];
    const module = await RemoteModule.create(trainer, 'ps', Linear, [4, 4]);
    const params = await module.remoteParameters();
    const opt = await DistributedOptimizer.create(trainer, 'adam', params, { learningRate: 0.01 });
    const w = tf.variable(tf.randomUniform([4], -1, 1, 'float32', 3));
    const x = tf.randomUniform([2, 4], -1, 1, 'float32', 4);
    const iteration = () =>
      trainer.distAutograd.context(async (ctxId) => {
        const h = await module.forward(x);
        // trainer -> relay -> trainer -> ps: nested hops, back to the initiator.
        const y = await trainer.rpcSync('relay', chain, [['trainer', 'ps'], h, w]);
        const loss = tf.tidy(() => tf.sum(tf.mul(y, w)));
        await trainer.distAutograd.backward(ctxId, [loss]);
        if (trainer.distAutograd.getGradients(ctxId).size !== 1) throw new Error('expected the gradient of w');
        await opt.step(ctxId);
        tf.dispose([h, y, loss]);
      });
    await iteration(); // optimizer state is made on the first step
    // Contexts are released on the other workers in the background: the baseline is taken once they are.
    await eventually(() => agents.every((a) => a.distAutograd.size === 0));
    const baseline = tf.memory().numTensors;
    const started = Date.now();
    for (let i = 0; i < CONTEXTS; i++) await iteration();
    const elapsed = Date.now() - started;
    t.log(`${CONTEXTS} contexts in ${elapsed} ms (${(elapsed / CONTEXTS).toFixed(2)} ms each)`);
    await eventually(() => agents.every((a) => a.distAutograd.size === 0));
    t.is(openContextCount(), 0);
    t.is(tf.memory().numTensors, baseline, 'every worker of this process is back to its tensor count');
    await opt.dispose();
    await Promise.all(params.map((p) => p.release()));
    await module.release();
    tf.dispose([w, x]);
  });
}
