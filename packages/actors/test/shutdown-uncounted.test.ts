/**
 * Shutdown's barrier and calls the callee did not count: a member's call
 * whose MAC the callee cannot check is served as an unverified caller's and
 * not counted in the callee's `receivedFrom`; its answer says so and the
 * caller takes it out of its `sentTo`, so graceful shutdown is never held by
 * it (it was held for good: `a->b (calls in flight)`).
 */
import test from 'ava';
import { hostOf } from '../src/internal.js';
import { addNumbers, fail } from './fixtures/functions.js';
import { startGroup, stopEverything, transportKinds } from './helpers.js';

test.after.always(stopEverything);

/** Resolves with what `promise` settles to, or 'held' when it has not settled within `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'held'> {
  return Promise.race([promise, new Promise<'held'>((resolve) => setTimeout(() => resolve('held'), ms))]);
}

for (const kind of transportKinds('without-tcp')) {
  test.serial(`${kind.name} - shutdown - a member's calls the callee could not verify (served, or failing) do not hold the graceful barrier`, async (t) => {
    const [a, b] = await startGroup(kind, ['a', 'b'], { worldSize: 2 });
    // a's MACs to b are garbled, as when b cannot check them (a key b does not have, a counter outside its window).
    const auth = hostOf(a!).callAuth;
    const seal = auth.seal.bind(auth);
    auth.seal = (to, kind_, fn, body) => {
      const sealed = seal(to, kind_, fn, body);
      return to === 'b' && body === undefined && sealed ? [sealed[0], new Uint8Array(16)] : sealed;
    };
    const unverifiedBefore = hostOf(b!).callAuth.unverified;
    t.is(await a!.rpcSync('b', addNumbers, [1, 2]), 3, 'served, as an unverified caller');
    await t.throwsAsync(a!.rpcSync('b', fail, ['no']), { message: /no/ });
    t.is(hostOf(b!).callAuth.unverified - unverifiedBefore, 2);
    auth.seal = seal;
    // Counted on neither side, so the barrier's counts agree; a verified call still counts on both.
    const uncounted = [hostOf(a!).callCounts.sentTo.b ?? 0, hostOf(b!).callCounts.receivedFrom.a ?? 0];
    t.is(await a!.rpcSync('b', addNumbers, [2, 2]), 4);
    const counted = [hostOf(a!).callCounts.sentTo.b, hostOf(b!).callCounts.receivedFrom.a];
    const ended = await within(Promise.all([a!.shutdown(), b!.shutdown()]).then(() => 'ended'), 10_000);
    t.is(ended, 'ended', 'graceful shutdown ended on both');
    t.deepEqual(uncounted, [0, 0]);
    t.deepEqual(counted, [1, 1]);
  });
}
