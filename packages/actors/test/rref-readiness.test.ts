/**
 * RRef readiness over every transport: a function starts only once the RRefs
 * among its arguments are usable where it runs (their values exist on their
 * owner, their forks are confirmed), and one timeout bounds the whole of an
 * RRef operation, the wait for its creation included.
 */
import test from 'ava';
import { RpcTimeoutError, RRefError } from '@tensorbus/core';
import { RRef as RRefClass, type RRef } from '../src/index.js';
import { addNumbers, sleep } from './fixtures/functions.js';
import { confirmedAtStart, failToCreate, failToCreateAfter, localValueOf, rrefValue, slowCounter } from './fixtures/rref-functions.js';
import { eventually, rrefsReleased, startGroup, stopAll, stopEverything, transportKinds } from './helpers.js';
import { hostOf, RREFS } from '../src/internal.js';

test.after.always(stopEverything);

/** Failure detection with slack for a loaded machine: these tests are about RRefs, not about failures. */
const SLACK = { failureTimeoutMs: 5_000 };

type Counter = { inc(k: number): number };

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - rref readiness - ${title}`;

  test(t('an owner uses an RRef it was just asked to create, at once, every time'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a] = agents;
    for (let i = 0; i < 30; i++) {
      const r = a!.remote('b', addNumbers, [i, 1]);
      tt.is(await a!.rpcSync('b', localValueOf, [r]), i + 1, `call ${i}`);
      await r.release();
    }
    // The creation takes a while: the owner's function waits for it.
    const slow = a!.remote('b', sleep, [300, 'made']);
    tt.is(await a!.rpcSync('b', localValueOf, [slow]), 'made');
    // The owner is the caller itself.
    for (let i = 0; i < 30; i++) {
      const own = a!.remote('a', addNumbers, [i, 2]);
      tt.is(await a!.rpcSync('a', localValueOf, [own]), i + 2, `own call ${i}`);
      await own.release();
    }
    await slow.release();
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  test(t('a call whose RRef argument failed to be created fails with the creation error, on its owner'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a] = agents;
    const failed = a!.remote('b', failToCreate, []);
    const error = await tt.throwsAsync(a!.rpcSync('b', localValueOf, [failed]));
    tt.is((error as RRefError).code, 'RREF_CREATION_FAILED');
    tt.regex(error!.message, /cannot make this/);
    await failed.release();
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  test(t('RRef arguments are confirmed by their owner when the function starts'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c'], SLACK);
    const [a] = agents;
    const ownedByCaller = a!.rref({ v: 1 });
    const ownedByThird = a!.remote('c', addNumbers, [1, 1]);
    const justMade = a!.remote('c', sleep, [200, 'later']);
    for (let i = 0; i < 5; i++) {
      tt.deepEqual(await a!.rpcSync('b', confirmedAtStart, [[ownedByCaller, ownedByThird, justMade]]), [true, true, true], `call ${i}`);
    }
    await Promise.all([ownedByCaller.release(), ownedByThird.release(), justMade.release()]);
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  // Serial: its bound is a wall-clock promise, not to be shared with the file's concurrent groups starting.
  test.serial(t('a value whose creation waits for its arguments is known from the creation\'s arrival: its forks are confirmed at once'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c'], SLACK);
    const [a] = agents;
    // b makes `made` from `slow`, so the creation of `made` waits 3 s on b for `slow`'s value (readiness).
    const slow = a!.remote('b', sleep, [3_000, 'slow']);
    const made = a!.remote('b', localValueOf, [slow]);
    // Meanwhile c gets a fork of `made` (a -> b rref.forked, c -> b rref.fork): b knows the value and confirms it.
    const started = Date.now();
    tt.deepEqual(await a!.rpcSync('c', confirmedAtStart, [[made]]), [true]);
    const took = Date.now() - started;
    tt.true(took < 2_000, `c's fork was confirmed after ${took} ms: it waited for the creation to run`);
    tt.is(await a!.rpcSync('c', rrefValue, [made]), 'slow', 'the fork reads the value once made');
    await Promise.all([slow.release(), made.release()]);
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  test(t('a value whose creation failed waiting for its arguments fails for every holder and leaves nothing behind'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c'], SLACK);
    const [a] = agents;
    const failing = a!.remote('b', failToCreateAfter, [300]);
    const made = a!.remote('b', localValueOf, [failing]);
    // c's fork of `made` is confirmed while the creation waits; the creation then fails without running.
    const error = await tt.throwsAsync(a!.rpcSync('c', rrefValue, [made]));
    tt.is((error as RRefError).code, 'RREF_CREATION_FAILED', error!.message);
    const own = await tt.throwsAsync(made.toHere());
    tt.is((own as RRefError).code, 'RREF_CREATION_FAILED', own!.message);
    await Promise.all([failing.release(), made.release()]);
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  // Serial: its bounds are the product's wall-clock promises, not to be shared with the file's concurrent groups starting.
  test.serial(t('a timeout bounds the whole wait: toHere, rpcSync and rpcAsync on an RRef still being created'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a, b] = agents;
    // Creations of 3 s: the 10 ms uses must end long before, however loaded the machine.
    const onB = a!.remote('b', slowCounter, [3_000]) as unknown as RRef<Counter>;
    const onA = a!.remote('a', slowCounter, [3_000]) as unknown as RRef<Counter>;
    for (const r of [onB, onA]) {
      const where = r.isOwner() ? 'owner' : 'user';
      const started = Date.now();
      await tt.throwsAsync(r.toHere({ timeoutMs: 10 }), { instanceOf: RpcTimeoutError }, `${where}: toHere`);
      await tt.throwsAsync(r.rpcSync({ timeoutMs: 10 }).inc(1), { instanceOf: RpcTimeoutError }, `${where}: rpcSync`);
      await tt.throwsAsync(r.rpcAsync({ timeoutMs: 10 }).inc(1), { instanceOf: RpcTimeoutError }, `${where}: rpcAsync`);
      const took = Date.now() - started;
      tt.true(took < 1_500, `${where}: three 10 ms waits took ${took} ms, not the 3 s creation`);
    }
    // Nothing was sent or left waiting for the timed-out uses; the RRefs still work once made.
    tt.is(hostOf(a!).calls.inFlight, 2, 'only the two creations are in flight');
    tt.is(await onB.rpcSync().inc(2), 2);
    tt.is(await onA.rpcSync().inc(3), 3);
    tt.is(await onB.rpcSync().inc(2), 4, 'no timed-out call ran on the value');
    await Promise.all([onB.release(), onA.release()]);
    await rrefsReleased([a!, b!]);
    await eventually(() => hostOf(a!).calls.inFlight === 0 && hostOf(b!).calls.inFlight === 0);
    await stopAll(agents);
  });
}

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - rref readiness - ${title}`;

  test(t('an RRef whose creation is still on its way reaches its owner first: the owner waits for the creation'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a] = agents;
    for (let i = 0; i < 10; i++) {
      // The method's creation is sent only once `counter` is confirmed: the call carrying `n` gets there first.
      const counter = a!.remote('b', slowCounter, [20]) as unknown as RRef<Counter>;
      const n = counter.remote().inc(i + 1);
      tt.is(await a!.rpcSync('b', localValueOf, [n]), i + 1, `call ${i}`);
      await Promise.all([counter.release(), n.release()]);
    }
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  test(t('an RRef its owner never made fails the call after a bounded wait and leaves nothing behind'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a, b] = agents;
    // A fork of an id b never made (a forged or long-dropped reference), sent by a.
    const state = { rrefId: 'a.forged.1', owner: 'b', forkId: 'a.forged.2', confirmed: true, confirmation: Promise.resolve(), failure: undefined, released: false, pendingChildren: new Map(), handles: 1 };
    const forged = new RRefClass(hostOf(a!).plugin(RREFS), state.rrefId, 'b', state, undefined);
    const started = Date.now();
    const error = await tt.throwsAsync(a!.rpcSync('b', localValueOf, [forged]));
    tt.is((error as RRefError).code, 'RREF_CREATION_FAILED');
    tt.regex(error!.message, /holds no such value/);
    tt.true(Date.now() - started < 9_000, 'bounded by the wait for a creation on its way (5 s)');
    state.released = true;
    await rrefsReleased([a!, b!]);
    await stopAll(agents);
  });
}
