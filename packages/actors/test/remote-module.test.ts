/**
 * RemoteModule over every transport: creation, forward and forwardAsync,
 * autograd through forward, remote parameters feeding DistributedOptimizer.
 */
import test, { type ExecutionContext } from 'ava';
import { InvalidArgumentError, RpcFuture, RRefError, tf } from '@tensorbus/core';
import { DistributedOptimizer, RemoteModule, RRef, type RpcAgent } from '../src/index.js';
import { assertClose } from './autograd-helpers.js';
import { BrokenModule, Linear, NotAModule } from './fixtures/autograd-functions.js';
import { startGroup, stopAll, transportKinds, type TransportKind } from './helpers.js';

async function group(tt: ExecutionContext, kind: TransportKind, names: string[]): Promise<RpcAgent[]> {
  const agents = await startGroup(kind, names);
  tt.teardown(() => stopAll(agents));
  return agents;
}

/** Values of the module's parameters, fetched here. */
async function parameterValues(module: RemoteModule<InstanceType<typeof Linear>>): Promise<tf.Tensor[]> {
  const refs = await module.remoteParameters();
  return Promise.all(refs.map((r) => r.toHere()));
}

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - remote module - ${title}`;

  test(t('create on another worker; forward and forwardAsync run there; getModuleRRef'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer, ps] = agents as [RpcAgent, RpcAgent];
    const module = await RemoteModule.create(trainer, 'ps', Linear, [3, 2]);
    const ref = module.getModuleRRef();
    tt.true(ref instanceof RRef);
    tt.is(ref.ownerName(), 'ps');
    tt.is(ps.rrefStats().owners >= 1, true);
    const [w, b] = await parameterValues(module);
    const x = tf.tensor2d([[1, -2, 3], [0.5, 0.5, -1]]);
    const expected = tf.relu(tf.add(tf.matMul(x, w!), b!));
    await assertClose(tt, await module.forward(x), expected, 'forward');
    const future = module.forwardAsync(x);
    tt.true(future instanceof RpcFuture);
    await assertClose(tt, await future, expected, 'forwardAsync');
    await module.release();
  });

  test(t('forward inside a context records autograd; remoteParameters feed DistributedOptimizer'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer] = agents as [RpcAgent];
    const module = await RemoteModule.create(trainer, 'ps', Linear, [3, 2, 7]);
    const params = await module.remoteParameters();
    tt.is(params.length, 2);
    tt.true(params.every((p) => p.ownerName() === 'ps'));
    const opt = await DistributedOptimizer.create(trainer, 'sgd', params, { learningRate: 0.1 });
    const [w, b] = (await parameterValues(module)).map((v) => tf.variable(v));
    const local = tf.train.sgd(0.1);
    const x = tf.tensor2d([[1, -2, 3], [0.5, 0.5, -1]]);
    const target = tf.tensor2d([[0.5, 1], [1, -1]]);
    for (let step = 0; step < 3; step++) {
      await trainer.distAutograd.context(async (ctxId) => {
        const y = await module.forward(x);
        const loss = tf.losses.meanSquaredError(target, y);
        await trainer.distAutograd.backward(ctxId, [loss]);
        await opt.step(ctxId);
      });
      local.minimize(() => tf.losses.meanSquaredError(target, tf.relu(tf.add(tf.matMul(x, w!), b!))) as tf.Scalar, false, [w!, b!]);
      const [rw, rb] = await parameterValues(module);
      await assertClose(tt, rw, w!, `step ${step}: w`);
      await assertClose(tt, rb, b!, `step ${step}: b`);
    }
    await opt.dispose();
    await Promise.all(params.map((p) => p.release()));
    tt.true((await module.forward(x)) instanceof tf.Tensor, 'releasing parameter RRefs leaves the module working');
    await module.release();
  });

  test(t('remoteParameters gives RRefs to the same variables each time'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer] = agents as [RpcAgent];
    const module = await RemoteModule.create(trainer, 'ps', Linear, [2, 2]);
    const first = await module.remoteParameters();
    const second = await module.remoteParameters();
    tt.deepEqual(
      first.map((r) => r.toString()),
      second.map((r) => r.toString()),
    );
    await Promise.all([...first, ...second].map((r) => r.release()));
    await module.release();
  });

  // Serial: it counts the tensors of this process, where the other tests' workers live too.
  test.serial(t('dispose frees the weights on the module\'s worker; release alone keeps them'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer] = agents as [RpcAgent];
    const before = tf.memory().numTensors;
    const kept = await RemoteModule.create(trainer, 'ps', Linear, [4, 3]);
    const keptWeights = await parameterValues(kept);
    tf.dispose(keptWeights);
    await kept.release();
    tt.is(tf.memory().numTensors, before + 2, 'a released module keeps its two variables');
    const module = await RemoteModule.create(trainer, 'ps', Linear, [4, 3]);
    const params = await module.remoteParameters();
    await Promise.all(params.map((r) => r.release()));
    await module.dispose();
    tt.is(tf.memory().numTensors, before + 2, 'the disposed module\'s weights are gone');
    await tt.throwsAsync(module.forward(tf.ones([1, 4])), { instanceOf: RRefError });
  });

  test(t('creation errors propagate'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer] = agents as [RpcAgent];
    await tt.throwsAsync(RemoteModule.create(trainer, 'ps', BrokenModule, []), { instanceOf: RRefError, code: 'RREF_CREATION_FAILED', message: /cannot build this module/ });
    await tt.throwsAsync(RemoteModule.create(trainer, 'ps', NotAModule as never, []), { instanceOf: InvalidArgumentError, message: /forward/ });
    class Plain {
      forward(x: tf.Tensor) {
        return x;
      }
      parameters() {
        return [];
      }
    }
    await tt.throwsAsync(RemoteModule.create(trainer, 'ps', Plain as never, []), { instanceOf: InvalidArgumentError, message: /not registered/ });
  });
}
