/**
 * DistributedOptimizer over every transport: each optimizer gives what the
 * same optimizer gives locally, variables without gradients stay, errors
 * propagate (ported from PyTorch's dist_optimizer_test.py).
 */
import test, { type ExecutionContext } from 'ava';
import { AutogradError, InvalidArgumentError, RRefError, tf, WorkerUnavailableError } from '@tensorbus/core';
import { DistributedOptimizer, type OptimizerName, type OptimizerOptions, type RpcAgent, type RRef } from '../src/index.js';
import { assertClose } from './autograd-helpers.js';
import { add, linear, makeVariable } from './fixtures/autograd-functions.js';
import { startGroup, stopAll, transportKinds, type TransportKind } from './helpers.js';

async function group(tt: ExecutionContext, kind: TransportKind, names: string[]): Promise<RpcAgent[]> {
  const agents = await startGroup(kind, names);
  tt.teardown(() => stopAll(agents));
  return agents;
}

const W1 = [[0.1, -0.2, 0.3, 0.05], [0.4, 0.5, -0.6, 0.2], [-0.7, 0.8, 0.9, -0.1]];
const W2 = [[0.2, -0.1], [0.3, 0.7], [-0.5, 0.4], [0.6, -0.3]];
const W3 = [[0.5, -1.5]];
const X = [[1, 2, 3], [-1, 0.5, 2]];

/** The model's loss: sum((tanh(x @ w1) @ w2 * w3)^2), from out = tanh(x @ w1) @ w2. */
function lossOf(out: tf.Tensor, w3: tf.Tensor): tf.Scalar {
  return tf.sum(tf.square(tf.mul(out, w3)));
}

/** The optimizer a user would make locally. */
function localOptimizer(name: OptimizerName, o: OptimizerOptions): tf.Optimizer {
  switch (name) {
    case 'sgd':
      return tf.train.sgd(o.learningRate!);
    case 'momentum':
      return tf.train.momentum(o.learningRate!, o.momentum!);
    case 'adam':
      return tf.train.adam(o.learningRate);
    case 'adagrad':
      return tf.train.adagrad(o.learningRate!);
    case 'adadelta':
      return tf.train.adadelta(o.learningRate);
    case 'adamax':
      return tf.train.adamax(o.learningRate);
    case 'rmsprop':
      return tf.train.rmsprop(o.learningRate!, undefined, o.momentum);
  }
}

const cases: Array<[OptimizerName, OptimizerOptions]> = [
  ['sgd', { learningRate: 0.05 }],
  ['momentum', { learningRate: 0.05, momentum: 0.9 }],
  ['adam', { learningRate: 0.05 }],
  ['adagrad', { learningRate: 0.05 }],
  ['adadelta', { learningRate: 0.5 }],
  ['adamax', { learningRate: 0.05 }],
  ['rmsprop', { learningRate: 0.05, momentum: 0.5 }],
];

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - dist optimizer - ${title}`;

  for (const [name, options] of cases) {
    test(t(`${name}: after each step, the remote variables equal a local run of the same optimizer`), async (tt) => {
      const agents = await group(tt, kind, ['trainer', 'ps1', 'ps2']);
      const [trainer] = agents as [RpcAgent];
      const w1Ref = trainer.remote('ps1', makeVariable, [W1]) as RRef<tf.Variable>;
      const w2Ref = trainer.remote('ps2', makeVariable, [W2]) as RRef<tf.Variable>;
      const w3 = tf.variable(tf.tensor2d(W3));
      const w3Ref = trainer.rref(w3);
      const x = tf.tensor2d(X);
      const opt = await DistributedOptimizer.create(trainer, name, [w1Ref, w2Ref, w3Ref], options);

      const local = [tf.variable(tf.tensor2d(W1)), tf.variable(tf.tensor2d(W2)), tf.variable(tf.tensor2d(W3))] as const;
      const localOpt = localOptimizer(name, options);
      for (let step = 0; step < 3; step++) {
        await trainer.distAutograd.context(async (ctxId) => {
          const h = tf.tanh(await trainer.rpcSync('ps1', linear, [w1Ref, x]));
          const out = await trainer.rpcSync('ps2', linear, [w2Ref, h]);
          const loss = lossOf(out, w3);
          await trainer.distAutograd.backward(ctxId, [loss]);
          await opt.step(ctxId);
        });
        localOpt.minimize(() => lossOf(tf.matMul(tf.tanh(tf.matMul(x, local[0])), local[1]), local[2]), false, [...local]);
        await assertClose(tt, await w1Ref.toHere(), local[0], `step ${step}: w1 on ps1`);
        await assertClose(tt, await w2Ref.toHere(), local[1], `step ${step}: w2 on ps2`);
        await assertClose(tt, w3, local[2], `step ${step}: w3 here`);
      }
      await opt.dispose();
      localOpt.dispose();
      await Promise.all([w1Ref.release(), w2Ref.release(), w3Ref.release()]);
      tf.dispose([x, ...local]);
    });
  }

  test(t('a variable without a gradient is unchanged, even with momentum; so are those of an owner the context never reached'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps1', 'ps2']);
    const [trainer] = agents as [RpcAgent];
    const used = trainer.remote('ps1', makeVariable, [W1]) as RRef<tf.Variable>;
    const unused = trainer.remote('ps1', makeVariable, [W2]) as RRef<tf.Variable>;
    const elsewhere = trainer.remote('ps2', makeVariable, [W3]) as RRef<tf.Variable>;
    const x = tf.tensor2d(X);
    const opt = await DistributedOptimizer.create(trainer, 'momentum', [used, unused, elsewhere], { learningRate: 0.1, momentum: 0.9 });
    for (let step = 0; step < 2; step++) {
      await trainer.distAutograd.context(async (ctxId) => {
        const loss = tf.sum(await trainer.rpcSync('ps1', linear, [used, x]));
        await trainer.distAutograd.backward(ctxId, [loss]);
        await opt.step(ctxId);
      });
    }
    await assertClose(tt, await unused.toHere(), tf.tensor2d(W2), 'unused');
    await assertClose(tt, await elsewhere.toHere(), tf.tensor2d(W3), 'on an owner outside the context');
    const changed = await used.toHere();
    tt.notDeepEqual(await changed.array(), await tf.tensor2d(W1).array(), 'the used variable moved');
    await opt.dispose();
    await Promise.all([used.release(), unused.release(), elsewhere.release()]);
    x.dispose();
  });

  test(t('creation errors propagate'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer] = agents as [RpcAgent];
    const w = trainer.remote('ps', makeVariable, [W1]) as RRef<tf.Variable>;
    await tt.throwsAsync(DistributedOptimizer.create(trainer, 'lbfgs' as OptimizerName, [w]), { instanceOf: InvalidArgumentError, message: /unknown optimizer "lbfgs"/ });
    await tt.throwsAsync(DistributedOptimizer.create(trainer, 'sgd', [w]), { instanceOf: InvalidArgumentError, message: /learningRate/ });
    await tt.throwsAsync(DistributedOptimizer.create(trainer, 'sgd', [w, 'w' as never], { learningRate: 1 }), { instanceOf: InvalidArgumentError });
    const notAVariable = trainer.remote('ps', add, [tf.ones([2]), tf.ones([2])]);
    await tt.throwsAsync(DistributedOptimizer.create(trainer, 'sgd', [w, notAVariable as never], { learningRate: 1 }), {
      instanceOf: InvalidArgumentError,
      message: /does not hold a tf.Variable/,
    });
    const failed = trainer.remote('ps', makeVariable, ['not numbers' as never]) as RRef<tf.Variable>;
    await tt.throwsAsync(DistributedOptimizer.create(trainer, 'adam', [failed], {}), { instanceOf: RRefError, code: 'RREF_CREATION_FAILED' });
    await Promise.all([w.release(), notAVariable.release(), failed.release()]);
  });

  test(t('step errors propagate'), async (tt) => {
    const agents = await group(tt, kind, ['trainer', 'ps']);
    const [trainer, ps] = agents as [RpcAgent, RpcAgent];
    const w = trainer.remote('ps', makeVariable, [W1]) as RRef<tf.Variable>;
    const opt = await DistributedOptimizer.create(trainer, 'sgd', [w], { learningRate: 0.1 });
    await tt.throwsAsync(opt.step('no-such-context'), { instanceOf: AutogradError, code: 'AUTOGRAD_CONTEXT_NOT_FOUND' });
    await trainer.distAutograd.context(async (ctxId) => {
      await ps.shutdown({ graceful: false });
      await tt.throwsAsync(opt.step(ctxId), { instanceOf: WorkerUnavailableError });
    });
    await opt.dispose();
    await tt.throwsAsync(opt.step('x'), { instanceOf: InvalidArgumentError, message: /disposed/ });
  });
}
