/**
 * Proxy and result types say what arrives, not what the callee had: a
 * tf.Variable arrives as a tensor, a class instance as its data fields. The
 * type checks below are compiled by `npm run build` (an `@ts-expect-error`
 * that finds no error fails the build); the tests check the values match.
 */
import test from 'ava';
import { tf } from '@tensorbus/core';
import { RemoteModule, type Received, type RRef } from '../src/index.js';
import { Dense, Net } from './fixtures/tensor-functions.js';
import { startGroup, stopEverything, transportKinds } from './helpers.js';

test.after.always(stopEverything);

// ---- types (checked at build time) ----------------------------------------------

type Equal<X, Y> = (<T>() => T extends X ? 1 : 2) extends <T>() => T extends Y ? 1 : 2 ? true : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}
expectType<Equal<Received<tf.Variable>, tf.Tensor>>();
expectType<Equal<Received<tf.Variable[]>, tf.Tensor[]>>();
expectType<Equal<Received<Promise<Map<string, tf.Variable>>>, Map<string, tf.Tensor>>>();
expectType<Equal<Received<[tf.Variable, number]>, [tf.Tensor, number]>>();
expectType<Equal<Received<{ w: tf.Variable; f(): void; n: number }>, { w: tf.Tensor; n: number }>>();
expectType<Equal<Received<tf.Tensor2D>, tf.Tensor2D>>();
expectType<Equal<Received<RRef<tf.Variable>>, RRef<tf.Variable>>>();
expectType<Equal<Received<unknown>, unknown>>();
expectType<Equal<Received<string | undefined>, string | undefined>>();

type NetInstance = InstanceType<typeof Net>;

/** Never called: it only has to compile (and fail to where marked). */
export async function typesOfProxies(net: RRef<NetInstance>, module: RemoteModule<InstanceType<typeof Dense>>): Promise<void> {
  const params = await net.rpcSync().parameters();
  expectType<Equal<typeof params, tf.Tensor[]>>();
  // @ts-expect-error a parameter arrives as a tensor: it has no assign()
  params[0]!.assign(tf.zeros([2]));
  const later = await net.rpcAsync().named();
  expectType<Equal<typeof later, Map<string, tf.Tensor>>>();
  const copy = await net.toHere();
  // @ts-expect-error a copy of an instance has its data, not its methods
  copy.parameters();
  // @ts-expect-error the copy's w is a tensor
  copy.w.assign(tf.zeros([2]));
  expectType<Equal<typeof copy.meta, { layers: number }>>();
  // remote() keeps the result on the owner, where it is the Variable itself.
  const kept = net.remote().parameters();
  expectType<Equal<typeof kept, RRef<tf.Variable[]>>>();
  const byName = await net.rpcSync().parameters().then(() => undefined as unknown);
  expectType<Equal<Received<typeof byName>, unknown>>();
  const h = await module.forward(tf.ones([1, 4]));
  expectType<Equal<typeof h, tf.Tensor>>();
}

// ---- values -----------------------------------------------------------------------

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - received types - ${title}`;

  test(t('what rpcSync, rpcAsync and toHere deliver is what their types say: tensors for variables, data fields for instances'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b']);
    const net = a!.remote('b', Net, []);
    const params = await net.rpcSync().parameters();
    tt.is(params.length, 1);
    tt.true(params[0] instanceof tf.Tensor);
    tt.false(params[0] instanceof tf.Variable);
    tt.is((params[0] as unknown as { assign?: unknown }).assign, undefined);
    const named = await net.rpcAsync().named();
    tt.true(named instanceof Map);
    tt.false(named.get('w') instanceof tf.Variable);
    const copy = await net.toHere();
    tt.deepEqual(Object.keys(copy).sort(), ['meta', 'w']);
    tt.is((copy as unknown as { parameters?: unknown }).parameters, undefined);
    tt.false(copy.w instanceof tf.Variable);
    tt.deepEqual(copy.meta, { layers: 1 });
    const constructed = await a!.rpcSync('b', Net, []);
    tt.false(constructed.w instanceof tf.Variable);
    tf.dispose([...params, named.get('w')!, copy.w, constructed.w]);
    await net.release();
  });
}
