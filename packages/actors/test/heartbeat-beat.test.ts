/**
 * What a beacon thread sends for a worker (heartbeat-beat.ts), and how a
 * receiver takes a worker's announcements that come on two connections (the
 * main thread's and the beacon's) out of order: each once, never a replay,
 * never after the worker's goodbye.
 */
import test from 'ava';
import { defaultCodec, localTransport, type BeaconSpec, type Transport } from '@tensorbus/core';
import { initRpc } from '../src/index.js';
import { Identity } from '../src/agent/identity.js';
import type { Announcement } from '../src/membership/membership-protocol.js';
import { beat, BEATS, ID, JOINED, LEFT, SEQ, SHARED_LENGTH, signedText, STATE, type BeatData } from '../src/membership/heartbeat-beat.js';
import { advance, takeLate, WINDOW } from '../src/membership/replay-window.js';
import { MEMBERS_SUBJECT } from '../src/agent/subjects.js';
import { eventually, newGroup, stopAll, transportKinds } from './helpers.js';
import { hostOf, MEMBERSHIP } from '../src/internal.js';

function sharedMemory(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(SHARED_LENGTH * Int32Array.BYTES_PER_ELEMENT));
}

function beatData(identity: Identity, name = 'w'): BeatData {
  return { n: name, inst: 'inst-1', t: 1234, sk: identity.signKey, xk: identity.dhKey, key: identity.signingKey };
}

test('replay window - numbers out of order are each taken once; a repeat or a number older than the window is refused', (t) => {
  let newest = 0;
  let mask = 0;
  const take = (q: number): boolean => {
    if (q > newest) {
      mask = advance(newest, mask, q);
      newest = q;
      return true;
    }
    const late = takeLate(newest, mask, q);
    if (late === undefined) return false;
    mask = late;
    return true;
  };
  t.true(take(1));
  t.true(take(4));
  t.true(take(3), 'late, never heard');
  t.true(take(2), 'late, never heard');
  t.false(take(3), 'a repeat');
  t.false(take(4), 'the newest again');
  t.false(take(1), 'heard before the jump');
  t.true(take(4 + WINDOW + 1));
  t.false(take(4), 'heard, now out of the window');
  t.false(take(3), 'out of the window');
  t.true(take(5), 'the oldest number the window holds, never heard');
  t.true(take(4 + WINDOW), 'just below the newest');
  t.false(take(5));
});

test('heartbeat beat - a beacon beat is byte for byte the frame the codec makes of the same announcement, signed by the worker', (t) => {
  const identity = new Identity();
  const shared = sharedMemory();
  Atomics.store(shared, SEQ, 41);
  Atomics.store(shared, ID, 3);
  Atomics.store(shared, STATE, JOINED);
  const bytes = beat(beatData(identity), shared)!;
  const decoded = defaultCodec.decode(bytes) as Announcement;
  t.like(decoded, { k: 'hb', n: 'w', id: 3, inst: 'inst-1', t: 1234, q: 42, sk: identity.signKey, xk: identity.dhKey });
  t.true(identity.verify(identity.signKey, signedText(decoded), decoded.sig), 'signed with the worker key');
  t.deepEqual(bytes, defaultCodec.encode({ ...decoded }), 'the codec frames the same value to the same bytes');
  t.is(Atomics.load(shared, SEQ), 42, 'the number was taken from the shared counter');
});

test('heartbeat beat - beats say hello while joining and hb once joined, with the id last announced; none once the worker left', (t) => {
  const identity = new Identity();
  const shared = sharedMemory();
  Atomics.store(shared, ID, -1);
  const kindOf = () => (defaultCodec.decode(beat(beatData(identity), shared)!) as Announcement);
  t.like(kindOf(), { k: 'hello', id: -1, q: 1 });
  Atomics.store(shared, ID, 2);
  Atomics.store(shared, STATE, JOINED);
  t.like(kindOf(), { k: 'hb', id: 2, q: 2 });
  Atomics.store(shared, STATE, LEFT);
  t.is(beat(beatData(identity), shared), undefined);
  t.is(Atomics.load(shared, SEQ), 2, 'a worker that left takes no more numbers');
});

test('heartbeat beat - each beat the beacon makes is counted in the shared memory; a skipped one is not', (t) => {
  const identity = new Identity();
  const shared = sharedMemory();
  Atomics.store(shared, STATE, JOINED);
  beat(beatData(identity), shared);
  beat(beatData(identity), shared);
  t.is(Atomics.load(shared, BEATS), 2);
  Atomics.store(shared, STATE, LEFT);
  beat(beatData(identity), shared);
  t.is(Atomics.load(shared, BEATS), 2, 'no beat once the worker left');
});

/**
 * A local transport with a beacon the test drives: its beats are made by
 * heartbeat-beat.ts on the shared memory the worker hands over, as the NATS
 * beacon thread makes them, and published while `beating` is true.
 */
function withHandBeacon(transport: Transport) {
  const beacon = { beating: true, sent: 0, timer: undefined as NodeJS.Timeout | undefined };
  const startBeacon = (spec: BeaconSpec) => {
    beacon.timer = setInterval(() => {
      if (!beacon.beating) return;
      const bytes = beat(spec.data as BeatData, spec.shared);
      if (!bytes) return;
      beacon.sent++;
      transport.publish(spec.subject, bytes);
    }, spec.intervalMs);
    return { ready: Promise.resolve(true), remove: () => clearInterval(beacon.timer) };
  };
  return { transport: Object.assign(Object.create(transport) as Transport, { startBeacon }), beacon };
}

test('membership - the main thread does not beat while its beacon does, and beats again when the beacon stops', async (t) => {
  const bus = `beats${process.pid}`;
  const { transport, beacon } = withHandBeacon(localTransport({ bus }));
  const listener = localTransport({ bus });
  const heard: Announcement[] = [];
  await listener.subscribe(MEMBERS_SUBJECT, (message) => void heard.push(defaultCodec.decode(message.data) as Announcement));
  const heartbeatMs = 50;
  const a = await initRpc({ name: 'a', transport, heartbeatMs, failureTimeoutMs: 5_000 });
  t.teardown(async () => {
    clearInterval(beacon.timer);
    await stopAll([a]);
    await listener.close();
  });
  const beatsOfA = () => heard.filter((m) => m.n === 'a' && m.k === 'hb').length;
  const window = async () => {
    const [before, sentBefore, started] = [beatsOfA(), beacon.sent, Date.now()];
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const intervals = (Date.now() - started) / heartbeatMs;
    return { fromMain: beatsOfA() - before - (beacon.sent - sentBefore), fromBeacon: beacon.sent - sentBefore, intervals };
  };
  const beaconOn = await window();
  t.true(beaconOn.fromBeacon >= beaconOn.intervals / 2, `the beacon beat ${beaconOn.fromBeacon} times in ${beaconOn.intervals} intervals`);
  t.true(beaconOn.fromMain <= beaconOn.intervals / 4, `the main thread beat ${beaconOn.fromMain} times in ${beaconOn.intervals} intervals beside its beacon`);
  beacon.beating = false;
  await new Promise((resolve) => setTimeout(resolve, 2 * heartbeatMs));
  const beaconOff = await window();
  t.is(beaconOff.fromBeacon, 0);
  t.true(beaconOff.fromMain >= beaconOff.intervals / 2, `the main thread beat ${beaconOff.fromMain} times in ${beaconOff.intervals} intervals without its beacon`);
});

for (const kind of transportKinds()) {
  test(`${kind.name} - membership - a heartbeat delivered after a later one counts once; its replay is dropped, and an older beat does not bring back a worker that said bye`, async (t) => {
    const group = newGroup(kind);
    const a = await initRpc({ name: 'a', transport: group.transport(), heartbeatMs: 100, failureTimeoutMs: 5_000 });
    const raw = await group.transport();
    t.teardown(async () => {
      await stopAll([a]);
      await raw.close();
    });
    // A worker 'x' whose announcements come on two connections, played by hand in an order the bus may deliver them.
    const x = new Identity();
    const announce = (who: Identity, n: string, k: Announcement['k'], q: number, id: number) => {
      const message = { k, n, id, inst: `${n}-inst`, t: 1, q, sk: who.signKey, xk: who.dhKey } as Announcement;
      message.sig = who.sign(signedText(message));
      raw.publish(MEMBERS_SUBJECT, defaultCodec.encode(message));
    };
    const send = (k: Announcement['k'], q: number) => announce(x, 'x', k, q, 5);
    // Another worker's hello, sent after x's messages on the same connection: once a shows it, a handled those.
    const marker = (n: string) => announce(new Identity(), n, 'hello', 1, 10 + n.length);
    send('hello', 1);
    send('hb', 3);
    await eventually(() => a.workers().some((w) => w.name === 'x'));
    const dropped = hostOf(a).plugin(MEMBERSHIP).dropped;
    send('hb', 2); // late: never heard, a little below the newest
    send('hb', 2); // its replay
    send('hello', 1); // a replay of one heard before
    send('hb', 6); // fresh
    marker('y');
    await eventually(() => a.workers().some((w) => w.name === 'y'));
    t.is(hostOf(a).plugin(MEMBERSHIP).dropped, dropped + 2, 'the late beat counted; its replay and the old hello did not');
    send('bye', 8);
    await eventually(() => hostOf(a).members.departure('x') === 'left');
    send('hb', 7); // numbered before the bye, delivered after it
    send('hb', 9); // a worker that left may speak again as itself, with a greater number: the sentinel
    await eventually(() => a.workers().some((w) => w.name === 'x'));
    t.is(hostOf(a).plugin(MEMBERSHIP).dropped, dropped + 3, 'the beat numbered before the bye was dropped');
  });
}
