/**
 * The tensors a call makes end with the call (as in tf.tidy, across awaits):
 * functions, async functions, methods of remote objects, constructors and
 * RemoteModule forward, over every transport. In-process agents share one
 * TensorFlow.js engine, so tf.memory() counts the caller and the callee
 * together: each test disposes what it receives and compares with a baseline,
 * and the tests run one at a time.
 */
import test from 'ava';
import { RpcFuture, tf } from '@tensorbus/core';
import { RemoteModule } from '../src/index.js';
import {
  affine,
  affineAsync,
  cachesUntidy,
  constructedWeights,
  Dense,
  disposeCalls,
  gradientSum,
  keeps,
  keptHere,
  Net,
  Scaled,
  Tally,
  tallyWalks,
  trainStep,
} from './fixtures/tensor-functions.js';
import { eventually, startGroup, stopEverything, transportKinds } from './helpers.js';

test.after.always(stopEverything);

const live = () => tf.memory().numTensors;

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - tensors - ${title}`;

  test.serial(t('a synchronous function called 100 times leaves no intermediates on the callee'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const x = tf.tensor1d([1, 2, 3]);
    const baseline = live();
    for (let i = 0; i < 100; i++) {
      const y = await a!.rpcSync('b', affine, [x]);
      tt.deepEqual([...y.dataSync()], [3, 5, 7]);
      y.dispose();
    }
    tt.is(live(), baseline, 'not one tensor left behind per call');
    x.dispose();
  });

  test.serial(t("an async function's intermediates are disposed across awaits, with calls running concurrently"), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const x = tf.tensor1d([1, 2, 3]);
    const baseline = live();
    const sums = await Promise.all(Array.from({ length: 20 }, (_, i) => a!.rpcSync('b', affineAsync, [x, i % 5])));
    tt.deepEqual(sums.map((s) => s.dataSync()[0]), Array.from({ length: 20 }, () => 15));
    for (const s of sums) s.dispose();
    tt.is(live(), baseline);
    x.dispose();
  });

  test.serial(t('what a function returns (anywhere in its result), keeps with tf.keep() or makes as a tf.Variable survives its call'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const x = tf.tensor1d([1, 2]);
    keptHere.length = 0;
    const baseline = live();
    const result = await a!.rpcSync('b', keeps, [x]);
    tt.deepEqual([...result.nested[0]!.dataSync()], [5, 10]);
    tt.deepEqual([...result.map.get('k')!.dataSync()], [6, 12]);
    const [kept, variable] = keptHere as [tf.Tensor, tf.Variable];
    tt.false(kept.isDisposed);
    tt.false(variable.isDisposed);
    tt.deepEqual([...kept.dataSync()], [3, 6]);
    tt.deepEqual([...variable.dataSync()], [4, 8]);
    result.nested[0]!.dispose();
    result.map.get('k')!.dispose();
    kept.dispose();
    variable.dispose();
    tt.is(live(), baseline, 'nothing else was left behind');
    x.dispose();
  });

  test.serial(t('a function registered with { tidy: false } keeps everything it makes'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const x = tf.tensor1d([1, 2]);
    keptHere.length = 0;
    const baseline = live();
    const y = await a!.rpcSync('b', cachesUntidy, [x]);
    y.dispose();
    tt.is(keptHere.length, 1);
    tt.deepEqual([...keptHere[0]!.dataSync()], [7, 14], 'its cache is usable after the call');
    // The cached tensor and the product 2x are left to the function.
    tt.is(live(), baseline + 2);
    tf.dispose(keptHere);
    x.dispose();
  });

  test.serial(t('methods of a remote object (rpcSync, rpcAsync, remote()) dispose their intermediates and keep what they store on the instance'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const x = tf.tensor1d([1, 2]);
    const w = tf.tensor1d([10, 20]);
    const model = a!.remote('b', Scaled, [w]);
    await model.rpcSync().store(x);
    const baseline = live();
    for (let i = 0; i < 20; i++) {
      const y = await model.rpcSync().forward(x);
      tt.is(y.dataSync()[0], 66);
      y.dispose();
      const later = await RpcFuture.all([model.rpcAsync().forwardLater(x)]);
      tt.is(later[0]!.dataSync()[0], 66);
      later[0]!.dispose();
    }
    tt.is(live(), baseline, 'no intermediates of forward or forwardLater remain');
    const stored = await model.rpcSync().read();
    tt.deepEqual([...stored!.dataSync()], [1, 2], 'what store() put on the instance is still there');
    stored!.dispose();
    const ref = model.remote().forward(x);
    tt.is((await ref.toHere()).dataSync()[0], 66, 'a remote() of a method keeps its result as the new value');
    await ref.release();
    await model.release();
    x.dispose();
    w.dispose();
  });

  test.serial(t('a method that replaces a tensor on the object (this.w = this.w + g) frees the one it replaced; one it hands back goes once sent'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const g = tf.tensor1d([1, 2]);
    const w = tf.tensor1d([0, 0]);
    const model = a!.remote('b', Scaled, [w]);
    await model.rpcSync().accumulate(g);
    const baseline = live();
    for (let i = 0; i < 50; i++) await model.rpcSync().accumulate(g);
    tt.is(live(), baseline, 'one stored tensor, however many steps');
    const taken = await model.rpcSync().take();
    tt.deepEqual([...taken!.dataSync()], [51, 102]);
    taken!.dispose();
    tt.is(live(), baseline - 1, 'the object holds it no more, and the copy sent is disposed');
    await model.release();
    tf.dispose([g, w]);
  });

  test.serial(t('a method given no tensor, returning none and keeping none it made does not walk the object it runs on'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const tally = a!.remote('b', Tally, []);
    tt.is(await tally.rpcSync().add(1), 1);
    const walks = tallyWalks.count;
    const baseline = live();
    for (let i = 0; i < 20; i++) {
      await tally.rpcSync().add(1);
      tt.is(await tally.rpcSync().sumOf([1, 2, i]), 3 + i);
    }
    tt.is(await tally.rpcSync().add(0), 21);
    tt.is(tallyWalks.count, walks, 'the object was not walked again: a call costs the same however much the object holds');
    tt.is(live(), baseline, 'the tensors sumOf made are gone');
    await tally.release();
  });

  test.serial(t('an instance constructed for rpcSync is sent as a copy and freed on the callee, its tf.Variables included'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const baseline = live();
    for (let i = 0; i < 5; i++) {
      const copy = await a!.rpcSync('b', Net, []);
      tt.deepEqual([...copy.w.dataSync()], [1, 1]);
      copy.w.dispose();
    }
    tt.is(live(), baseline, 'no instance left behind with its variable');
  });

  test.serial(t("a constructor's tensor argument held in a #private field lives as long as the object, and goes with its last reference"), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const x = tf.tensor1d([1, 2]);
    const w = tf.tensor1d([10, 20]);
    const baseline = live();
    constructedWeights.length = 0;
    const calls = disposeCalls.n;
    const model = a!.remote('b', Scaled, [w]);
    const first = await model.rpcSync().forward(x);
    tt.is(first.dataSync()[0], 66);
    first.dispose();
    // Later calls find it too (the call that made the object is long over).
    const again = await model.rpcSync().forward(x);
    tt.is(again.dataSync()[0], 66);
    again.dispose();
    const weight = constructedWeights[0]!;
    tt.false(weight.isDisposed);
    await model.release();
    await eventually(() => weight.isDisposed);
    tt.is(disposeCalls.n, calls + 1, "the class's dispose() ran once");
    tt.false(w.isDisposed, "the caller's own tensor is the caller's");
    await eventually(() => live() === baseline);
    tf.dispose([x, w]);
  });

  test.serial(t('RemoteModule forward leaves no intermediates, and backward in an autograd context still gets its gradients'), async (tt) => {
    const [a, b] = await startGroup(kind, ['a', 'b']);
    const module = await RemoteModule.create(a!, 'b', Dense, []);
    const x = tf.ones([1, 4]);
    const baseline = live();
    for (let i = 0; i < 20; i++) {
      const h = await module.forward(x);
      tt.deepEqual([...h.dataSync()], [5, 5]);
      h.dispose();
    }
    tt.is(live(), baseline);
    await a!.distAutograd.context(async (id) => {
      const h = await module.forward(x);
      const loss = tf.sum(h);
      await a!.distAutograd.backward(id, [loss]);
      // d sum(relu(xW + 1)) / dW = x^T 1: eight ones.
      tt.is(await a!.rpcSync('b', gradientSum, [id]), 8);
      tf.dispose([h, loss]);
    });
    await eventually(() => b!.distAutograd.size === 0);
    await eventually(() => live() === baseline);
    tt.pass();
    x.dispose();
  });

  test.serial(t("a trainer's step run as a remote function (context, forward, backward) works, and leaves nothing behind on any worker"), async (tt) => {
    const [driver, trainer, ps] = await startGroup(kind, ['driver', 'trainer', 'ps']);
    const module = driver!.remote('ps', Dense, []);
    await module.toHere().then((copy) => copy.w.dispose());
    const x = tf.ones([1, 4]);
    const baseline = live();
    for (let i = 0; i < 5; i++) tt.is(await driver!.rpcSync('trainer', trainStep, [module, x]), 8);
    await eventually(() => trainer!.distAutograd.size === 0 && ps!.distAutograd.size === 0);
    await eventually(() => live() === baseline);
    tt.pass();
    await module.release();
    x.dispose();
  });
}
