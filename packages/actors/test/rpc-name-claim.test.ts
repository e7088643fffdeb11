import test from 'ava';
import { DuplicateWorkerError } from '@tensorbus/core';
import { initRpc } from '../src/index.js';
import { newGroup, stopEverything, transportKinds } from './helpers.js';

// Its own file: the stalled event loop would upset timing in other tests.
test.after.always(stopEverything);

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - membership - ${title}`;

  test.serial(t('claims of one name at staggered moments on a stalling event loop: exactly one wins each time'), async (tt) => {
    // A busy event loop (timers firing late, deliveries queued behind them) must
    // not let two workers hold one name.
    const stall = setInterval(() => {
      const until = Date.now() + 60;
      while (Date.now() < until);
    }, 40);
    tt.teardown(() => clearInterval(stall));
    for (const delayMs of [0, 2, 15, 40, 70]) {
      const group = newGroup(kind);
      const first = initRpc({ name: 'same', transport: group.transport() });
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const results = await Promise.allSettled([first, initRpc({ name: 'same', transport: group.transport() })]);
      const won = results.filter((r) => r.status === 'fulfilled') as PromiseFulfilledResult<Awaited<typeof first>>[];
      tt.is(won.length, 1, `second claim ${delayMs} ms after the first`);
      tt.true(results.some((r) => r.status === 'rejected' && r.reason instanceof DuplicateWorkerError));
      await Promise.all(won.map((w) => w.value.shutdown()));
    }
  });
}
