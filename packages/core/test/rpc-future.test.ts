import test from 'ava';
import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { RpcFuture } from '../src/index.js';

/** A promise with its resolve and reject at hand. */
function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void; reject: (error: unknown) => void } {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('rpc-future - await gives the value', async (t) => {
  const d = deferred<number>();
  const f = new RpcFuture(d.promise);
  d.resolve(42);
  t.is(await f, 42);
});

test('rpc-future - await rejects with the error', async (t) => {
  const f = RpcFuture.reject<number>(new Error('boom'));
  await t.throwsAsync(async () => f, { message: 'boom' });
});

test('rpc-future - wait() resolves with the value and rejects with the error', async (t) => {
  t.is(await RpcFuture.resolve('v').wait(), 'v');
  await t.throwsAsync(RpcFuture.reject(new TypeError('bad')).wait(), { instanceOf: TypeError });
});

test('rpc-future - done() is false until the value or error arrives', async (t) => {
  const ok = deferred<number>();
  const bad = deferred<number>();
  const f = new RpcFuture(ok.promise);
  const g = new RpcFuture(bad.promise);
  t.false(f.done());
  t.false(g.done());
  ok.resolve(1);
  bad.reject(new Error('x'));
  await f;
  await g.wait().catch(() => undefined);
  t.true(f.done());
  t.true(g.done());
});

test('rpc-future - asObservable() emits one value then completes', async (t) => {
  const d = deferred<string>();
  const f = new RpcFuture(d.promise);
  const early = lastValueFrom(f.asObservable().pipe(toArray()));
  d.resolve('once');
  t.deepEqual(await early, ['once']);
  t.deepEqual(await lastValueFrom(f.asObservable().pipe(toArray())), ['once'], 'a late subscriber gets it too');
});

test('rpc-future - asObservable() errors on failure', async (t) => {
  const f = RpcFuture.reject<number>(new RangeError('far'));
  const events: string[] = [];
  await new Promise<void>((resolve) =>
    f.asObservable().subscribe({
      next: () => events.push('next'),
      error: (error: unknown) => (events.push(`error ${(error as Error).message}`), resolve()),
      complete: () => (events.push('complete'), resolve()),
    }),
  );
  t.deepEqual(events, ['error far']);
  await t.throwsAsync(firstValueFrom(f.asObservable()), { instanceOf: RangeError });
});

test('rpc-future - RpcFuture.all resolves every value in order', async (t) => {
  const a = deferred<number>();
  const b = deferred<string>();
  const all: RpcFuture<[number, string]> = RpcFuture.all([new RpcFuture(a.promise), new RpcFuture(b.promise)]);
  b.resolve('two');
  a.resolve(1);
  const [one, two] = await all;
  t.is(one, 1);
  t.is(two, 'two');
  t.deepEqual(await RpcFuture.all([]), []);
});

test('rpc-future - RpcFuture.all rejects with the first error without waiting for the rest', async (t) => {
  const never = new RpcFuture(new Promise<number>(() => undefined));
  const late = deferred<number>();
  const early = deferred<number>();
  const all = RpcFuture.all([never, new RpcFuture(late.promise), new RpcFuture(early.promise)]);
  early.reject(new Error('first'));
  await t.throwsAsync(all.wait(), { message: 'first' });
  t.true(all.done());
  t.false(never.done(), 'it did not wait for the future that never settles');
  late.reject(new Error('second')); // a later failure changes nothing and is not unhandled
  await tick();
});

test('rpc-future - map() chains a function of the value', async (t) => {
  t.is(await RpcFuture.resolve(20).map((v) => v + 1), 21);
  await t.throwsAsync(RpcFuture.resolve(1).map(() => Promise.reject(new Error('in map'))).wait(), { message: 'in map' });
});

test.serial('rpc-future - an unobserved rejected future does not produce an unhandled rejection', async (t) => {
  const unhandled: unknown[] = [];
  const record = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', record);
  try {
    RpcFuture.reject(new Error('nobody looks'));
    const d = deferred<number>();
    const f = new RpcFuture(d.promise);
    f.asObservable(); // taken but never subscribed
    d.reject(new Error('nobody looks either'));
    const mapped = RpcFuture.reject<number>(new Error('mapped')).map((v) => v * 2);
    void mapped;
    RpcFuture.all([RpcFuture.reject(new Error('a')), RpcFuture.reject(new Error('b'))]);
    for (let i = 0; i < 5; i++) await tick();
  } finally {
    process.off('unhandledRejection', record);
  }
  t.deepEqual(unhandled, []);
});

test('rpc-future - RpcFuture.allSettled waits for every future and reports each outcome in order', async (t) => {
  const slow = deferred<number>();
  const failing = deferred<string>();
  const settled = RpcFuture.allSettled([new RpcFuture(slow.promise), new RpcFuture(failing.promise), RpcFuture.resolve(3)]);
  const error = new Error('second failed');
  failing.reject(error);
  await tick();
  t.false(settled.done(), 'a rejection does not settle it before the others');
  slow.resolve(1);
  const results = await settled;
  t.deepEqual(results, [
    { status: 'fulfilled', value: 1 },
    { status: 'rejected', reason: error },
    { status: 'fulfilled', value: 3 },
  ]);
  t.deepEqual(await RpcFuture.allSettled([]), []);
});
