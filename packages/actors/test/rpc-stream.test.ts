import test from 'ava';
import { firstValueFrom, from, interval, map, take, toArray } from 'rxjs';
import { RemoteError, UnknownFunctionError } from '@tensorbus/core';
import { remoteFunction } from '../src/index.js';
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
