/**
 * The bench's timing loop: a warm-up with a time limit stops once the limit
 * has passed and its floor is done, so a system many times slower than the
 * others is not kept warming up for minutes; without a limit every warm-up
 * call runs.
 */
import test from 'ava';
import { timeCalls } from '../src/bench/stats.js';

/** A call that takes `ms` and counts itself. */
function countedCall(ms: number): { call: () => Promise<void>; count: () => number } {
  let calls = 0;
  return {
    call: async () => {
      calls++;
      if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
    },
    count: () => calls,
  };
}

test('bench warm-up - a slow system stops warming up after the time limit, once the floor of calls is done', async (t) => {
  const slow = countedCall(20);
  const { samplesMs } = await timeCalls(slow.call, { warmup: 1000, warmupFloor: 4, warmupMaxMs: 30, reps: 3 });
  t.is(samplesMs.length, 3);
  // 4 calls of 20 ms pass the 30 ms limit: the floor is the whole warm-up.
  t.is(slow.count() - 3, 4);
});

test('bench warm-up - the floor is not cut short by the limit, and a fast system runs every warm-up call', async (t) => {
  const slow = countedCall(15);
  await timeCalls(slow.call, { warmup: 1000, warmupFloor: 6, warmupMaxMs: 1, reps: 1 });
  t.is(slow.count() - 1, 6);
  const fast = countedCall(0);
  await timeCalls(fast.call, { warmup: 500, warmupFloor: 10, warmupMaxMs: 10_000, reps: 2 });
  t.is(fast.count(), 502);
  const unlimited = countedCall(5);
  await timeCalls(unlimited.call, { warmup: 12, reps: 1 });
  t.is(unlimited.count(), 13);
});
