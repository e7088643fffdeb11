import test from 'ava';
import { concatMap, firstValueFrom, from, interval, lastValueFrom, map, mergeMap, take, toArray, type OperatorFunction } from 'rxjs';
import { RemoteError, UnknownFunctionError } from '@tensorbus/core';
import { concatMapStream, remoteFunction, type RpcAgent } from '../src/index.js';
import { countTo, produced, producedSoFar } from './fixtures/functions.js';
import { startGroup, stopAll, transportKinds } from './helpers.js';
import { stopEverything } from './helpers.js';

test.after.always(stopEverything);

const ticks = remoteFunction('test.ticks', (n: number) => interval(1).pipe(take(n), map((i) => i * 2)));
const failingStream = remoteFunction('test.failingStream', async function* () {
  yield 1;
  throw new SyntaxError('stream broke');
});
const fromArray = remoteFunction('test.fromArray', (items: unknown[]) => from(items));

/** Credit of the async-consumer tests. */
const CREDIT = 4;

/**
 * Streams 60 numbers from 'b' through `operator` with 4 ms of async work per item;
 * returns what came out and how far the producer (in this process too) got ahead of the finished work.
 */
async function consumeAsync(
  agent: RpcAgent,
  tag: string,
  operator: (work: (n: number) => Promise<number>) => OperatorFunction<number, number>,
): Promise<{ results: number[]; maxAhead: number }> {
  let maxAhead = 0;
  let finished = 0;
  const results = await lastValueFrom(
    agent.rpcStream<number>('b', countTo, [60, tag], { credit: CREDIT }).pipe(
      operator(async (n) => {
        await new Promise((resolve) => setTimeout(resolve, 4));
        maxAhead = Math.max(maxAhead, (produced.get(tag) ?? 0) - finished);
        finished++;
        return n * 10;
      }),
      toArray(),
    ),
  );
  return { results, maxAhead };
}

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - stream - ${title}`;

  test(t('an async iterable streams every item in order, then completes'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const items = await firstValueFrom(agents[0]!.rpcStream<number>('b', countTo, [100, 'all']).pipe(toArray()));
    tt.deepEqual(items, Array.from({ length: 100 }, (_, i) => i));
    await stopAll(agents);
  });

  test(t('an Observable streams too'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    tt.deepEqual(await firstValueFrom(agents[0]!.rpcStream<number>('b', ticks, [5]).pipe(toArray())), [0, 2, 4, 6, 8]);
    tt.deepEqual(await firstValueFrom(agents[0]!.rpcStream('b', fromArray, [['x', { y: 1 }]]).pipe(toArray())), ['x', { y: 1 }]);
    await stopAll(agents);
  });

  test(t('unsubscribing cancels the producer on the callee'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const got = await firstValueFrom(agents[0]!.rpcStream<number>('b', countTo, [1_000_000, `cancel-${kind.name}`, 1], { credit: 4 }).pipe(take(5), toArray()));
    tt.deepEqual(got, [0, 1, 2, 3, 4]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const after = await agents[0]!.rpcSync('b', producedSoFar, [`cancel-${kind.name}`]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    tt.is(await agents[0]!.rpcSync('b', producedSoFar, [`cancel-${kind.name}`]), after, 'the producer stopped');
    tt.true(after < 20);
    await stopAll(agents);
  });

  test(t('a slow subscriber holds the producer within its credit'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const credit = 8;
    let seen = 0;
    let maxAhead = 0;
    await new Promise<void>((resolve, reject) => {
      const subscription = agents[0]!.rpcStream<number>('b', countTo, [10_000, `slow-${kind.name}`], { credit }).subscribe({
        next: () => {
          seen++;
          // The producer runs in this process too: read how far it got while the subscriber is busy.
          maxAhead = Math.max(maxAhead, (produced.get(`slow-${kind.name}`) ?? 0) - seen);
          const until = Date.now() + 2;
          while (Date.now() < until);
          if (seen === 150) {
            subscription.unsubscribe();
            resolve();
          }
        },
        error: reject,
      });
    });
    tt.true(maxAhead > 0, 'the producer does run ahead of the subscriber');
    tt.true(maxAhead <= credit + 1, `producer ran ${maxAhead} items ahead with credit ${credit}`);
    await stopAll(agents);
  });

  test(t('an async consumer (concatMapStream with async work) holds the producer within its credit'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const { results, maxAhead } = await consumeAsync(agents[0]!, `async-${kind.name}`, concatMapStream);
    tt.deepEqual(results, Array.from({ length: 60 }, (_, i) => i * 10));
    tt.true(maxAhead > 1, 'the producer does run ahead of the consumer');
    tt.true(maxAhead <= CREDIT + 2, `producer ran ${maxAhead} items ahead with credit ${CREDIT}`);
    await stopAll(agents);
  });

  test(t('plain rxjs concatMap(async …) and mergeMap(async …, 2) hold the producer within its credit'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    for (const [name, operator] of [
      ['concatMap', (f: (n: number) => Promise<number>) => concatMap(f)],
      ['mergeMap 2', (f: (n: number) => Promise<number>) => mergeMap(f, 2)],
    ] as const) {
      const { results, maxAhead } = await consumeAsync(agents[0]!, `rx-${name}-${kind.name}`, operator);
      tt.deepEqual([...results].sort((p, q) => p - q), Array.from({ length: 60 }, (_, i) => i * 10), name);
      tt.true(maxAhead > 1, `${name}: the producer does run ahead of the consumer`);
      tt.true(maxAhead <= CREDIT + 2, `${name}: producer ran ${maxAhead} items ahead with credit ${CREDIT}`);
    }
    await stopAll(agents);
  });

  test(t('for await pulls items: the producer stays within credit of the loop; leaving the loop cancels it'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const credit = 4;
    const tag = `pull-${kind.name}`;
    let maxAhead = 0;
    const seen: number[] = [];
    for await (const n of agents[0]!.rpcStream<number>('b', countTo, [1_000_000, tag], { credit })) {
      await new Promise((resolve) => setTimeout(resolve, 3));
      maxAhead = Math.max(maxAhead, (produced.get(tag) ?? 0) - seen.length - 1);
      seen.push(n);
      if (seen.length === 40) break;
    }
    tt.deepEqual(seen, Array.from({ length: 40 }, (_, i) => i));
    tt.true(maxAhead <= credit + 2, `producer ran ${maxAhead} items ahead with credit ${credit}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const after = await agents[0]!.rpcSync('b', producedSoFar, [tag]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    tt.is(await agents[0]!.rpcSync('b', producedSoFar, [tag]), after, 'the producer stopped');
    const errors: unknown[] = [];
    try {
      for await (const item of agents[0]!.rpcStream('b', failingStream, [])) errors.push(item);
    } catch (error) {
      errors.push(error);
    }
    tt.is(errors[0], 1);
    tt.true(errors[1] instanceof RemoteError, 'a failing producer throws out of the loop');
    await stopAll(agents);
  });

  test(t('an error ends the stream with the remote error; unknown functions fail at open'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const items: unknown[] = [];
    const error = await new Promise<unknown>((resolve) =>
      agents[0]!.rpcStream('b', failingStream, []).subscribe({ next: (v) => items.push(v), error: resolve }),
    );
    tt.deepEqual(items, [1]);
    tt.true(error instanceof RemoteError);
    tt.is((error as RemoteError).remoteName, 'SyntaxError');
    const unknown = await new Promise<unknown>((resolve) => agents[0]!.rpcStream('b', 'nope', []).subscribe({ error: resolve }));
    tt.true(unknown instanceof UnknownFunctionError);
    await stopAll(agents);
  });
}
