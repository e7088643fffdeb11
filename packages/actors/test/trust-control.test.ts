/**
 * Trust boundaries of the control plane, over a real nats-server: values from
 * the wire never become protocol lines, membership messages must be signed by
 * the worker they name, and a call's sender is verified or treated as a
 * stranger. Attackers here are raw NATS clients in the group's namespace.
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { connect, type NatsConnection } from 'nats';
import { defaultCodec } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { initRpc, type RpcAgent } from '../src/index.js';
import { CallAuth, MAX_DIGESTS } from '../src/agent/call-auth.js';
import { Identity } from '../src/agent/identity.js';
import { signedText } from '../src/membership/heartbeat-beat.js';
import type { Announcement } from '../src/membership/membership-protocol.js';
import { addNumbers, countTo, echo, sleep } from './fixtures/functions.js';
import { callerSeen, membersSeen } from './fixtures/trust-functions.js';
import { stop } from './fixtures/worker-functions.js';
import { eventually, stopAll } from './helpers.js';
import { startProcessGroup, TIMING, stopProcessGroups } from './process-group.js';
import { hostOf, MEMBERSHIP } from '../src/internal.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
let groups = 0;

/** Text that, written into a PUB line as a subject, ends it and sends UNSUB for subscriptions 1..40, then a PUB to `tail`. */
const inject = (tail: string) => `x 0\r\n\r\n${Array.from({ length: 40 }, (_, i) => `UNSUB ${i + 1}`).join('\r\n')}\r\nPUB ${tail}`;

/** A raw NATS client: the attacker. */
async function attacker(t: { teardown(fn: () => unknown): void }): Promise<NatsConnection> {
  const server = await sharedNatsServer();
  const nc = await connect({ servers: server.url });
  t.teardown(() => nc.close());
  return nc;
}

/** Three in-process agents on their own transports in a fresh namespace of the shared server. */
async function inProcessGroup(t: { teardown(fn: () => unknown): void }): Promise<{ agents: RpcAgent[]; ns: string }> {
  const server = await sharedNatsServer();
  const ns = `trust${process.pid}x${++groups}`;
  const agents = await Promise.all(
    ['a', 'b', 'c'].map((name) => initRpc({ name, transport: natsTransport({ servers: server.url, namespace: ns }), heartbeatMs: 100, failureTimeoutMs: 1_500 })),
  );
  t.teardown(() => stopAll(agents));
  await eventually(() => agents.every((agent) => agent.workers().length === 3));
  return { agents, ns };
}

/** Every agent still sees all three, and calls go around the ring. */
async function groupIntact(agents: RpcAgent[]): Promise<boolean> {
  if (!agents.every((agent) => agent.workers().map((w) => w.name).sort().join() === 'a,b,c')) return false;
  const sums = await Promise.all(agents.map((agent, i) => agent.rpcSync(agents[(i + 1) % 3]!.self.name, addNumbers, [i, 1], { timeoutMs: 3_000 })));
  return sums.join() === '1,2,3';
}

/** An announcement signed with `identity` (the attacker's own keys). */
function signedBy(identity: Identity, fields: Omit<Announcement, 'sk' | 'xk' | 'sig'>): Announcement {
  const message = { ...fields, sk: identity.signKey, xk: identity.dhKey } as Announcement;
  message.sig = identity.sign(signedText(message));
  return message;
}

test.serial('control trust - a hello whose worker name carries protocol lines is dropped; every member keeps its view and its calls', async (t) => {
  const { agents, ns } = await inProcessGroup(t);
  const nc = await attacker(t);
  const evil = inject(`${ns}.tb.call.a`);
  nc.publish(`${ns}.tb.members`, defaultCodec.encode({ k: 'hello', n: evil, id: 7, inst: 'spoof', t: 0 }));
  // Signed with keys of its own, so only the check of the name stops it.
  nc.publish(`${ns}.tb.members`, defaultCodec.encode(signedBy(new Identity(), { k: 'hello', n: evil, id: 7, inst: 'spoof2', t: 0, q: 1 })));
  await nc.flush();
  await new Promise((resolve) => setTimeout(resolve, 400));
  t.true(await groupIntact(agents));
  t.true(agents.every((agent) => hostOf(agent).plugin(MEMBERSHIP).dropped >= 2), 'each member counted both');
});

test.serial('control trust - a query answers only on status subjects: an injected or foreign reply subject gets nothing', async (t) => {
  const { agents, ns } = await inProcessGroup(t);
  const nc = await attacker(t);
  let onCallSubject = 0;
  nc.subscribe(`${ns}.tb.call.b`, { callback: () => onCallSubject++ });
  let answers = 0;
  nc.subscribe(`${ns}.tb.status.probe`, { callback: () => answers++ });
  await nc.flush();
  nc.publish(`${ns}.tb.members`, defaultCodec.encode({ k: 'query', reply: inject(`${ns}.tb.call.b`) }));
  nc.publish(`${ns}.tb.members`, defaultCodec.encode({ k: 'query', reply: 'tb.call.b' }));
  nc.publish(`${ns}.tb.members`, defaultCodec.encode({ k: 'query', reply: 'tb.status.probe' }));
  await nc.flush();
  await eventually(() => answers === 3);
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.is(onCallSubject, 0, 'no member published on a call subject for the querier');
  t.true(await groupIntact(agents));
});

test.serial('control trust - a stream request whose item subject is not the caller’s own is refused; the callee stays on the bus', async (t) => {
  const { agents, ns } = await inProcessGroup(t);
  const nc = await attacker(t);
  for (const subject of [inject(`${ns}.tb.call.b`), 'tb.call.c', 'tb.stream.c.1']) {
    const reply = await nc.request(`${ns}.tb.call.b`, defaultCodec.encode([1, 'test.countTo', [3, 'inj'], { from: 'a' }, { id: 1, subject, credit: 4 }]), { timeout: 10_000 });
    const [kind, error] = defaultCodec.decode(reply.data) as [number, { code: string }];
    t.is(kind, 3, 'ERROR_UNCOUNTED: refused before its sender was known, not counted');
    t.is(error.code, 'SERIALIZATION');
  }
  await new Promise((resolve) => setTimeout(resolve, 200));
  t.true(await groupIntact(agents));
});

test.serial('control trust - a call shows its caller: verified for a member, unverified for a client that only claims the name', async (t) => {
  const { agents, ns } = await inProcessGroup(t);
  const [a, b] = agents as [RpcAgent, RpcAgent];
  t.deepEqual(await a.rpcSync('b', callerSeen), { caller: 'a', verified: true });
  t.deepEqual(await b.rpcSync('b', callerSeen), { caller: 'b', verified: true }, 'a worker calling itself is shown too');
  const nc = await attacker(t);
  const before = { ...hostOf(b).server.receivedFrom };
  const spoofed = await nc.request(`${ns}.tb.call.b`, defaultCodec.encode([0, 'test.trust.caller', [], { from: 'a' }]), { timeout: 10_000 });
  t.deepEqual(defaultCodec.decode(spoofed.data), [2, { caller: 'a', verified: false }], 'served, as a stranger (OK_UNCOUNTED: not counted as a call from a)');
  // A genuine MAC replayed, or put on another function, does not show it either.
  const auth = hostOf(a).callAuth.seal('b', 0, 'test.trust.caller')!;
  const genuine = await nc.request(`${ns}.tb.call.b`, defaultCodec.encode([0, 'test.trust.caller', [], { from: 'a', auth }]), { timeout: 10_000 });
  t.deepEqual(defaultCodec.decode(genuine.data), [0, { caller: 'a', verified: true }]);
  for (const claimed of [auth, hostOf(a).callAuth.seal('b', 0, 'test.echo')]) {
    const replayed = await nc.request(`${ns}.tb.call.b`, defaultCodec.encode([0, 'test.trust.caller', [], { from: 'a', auth: claimed }]), { timeout: 10_000 });
    t.deepEqual(defaultCodec.decode(replayed.data), [2, { caller: 'a', verified: false }]);
  }
  t.is(hostOf(b).server.receivedFrom.a, (before.a ?? 0) + 1, 'only the genuine one counted as a call from a');
  t.true(hostOf(b).callAuth.unverified >= 3);
});

test.serial('control trust - a stream opened by a member is steered only by that member: spoofed cancels and credit are ignored', async (t) => {
  const { agents, ns } = await inProcessGroup(t);
  const [a, b] = agents as [RpcAgent, RpcAgent];
  const nc = await attacker(t);
  const items: number[] = [];
  const done = new Promise<void>((resolve, reject) => a.rpcStream<number>('b', countTo, [30, 'steer', 10], { credit: 4 }).subscribe({ next: (v) => items.push(v), error: reject, complete: resolve }));
  await eventually(() => items.length >= 2);
  const cancel = defaultCodec.encode({ k: 'scancel', caller: 'a', id: 1 });
  nc.publish(`${ns}.tb.ctl.b`, cancel); // no envelope: no sender
  nc.publish(`${ns}.tb.ctl.b`, defaultCodec.encode(['tbctl', Buffer.from(cancel), 'a', [1_000, 'A'.repeat(22)]])); // a forged MAC
  nc.publish(`${ns}.tb.ctl.b`, defaultCodec.encode({ k: 'scredit', caller: 'a', id: 1, n: 65_536 }));
  await nc.flush();
  await done;
  t.deepEqual(items, Array.from({ length: 30 }, (_, i) => i), 'every item arrived: the stream was neither cancelled nor flooded past its credit');
  t.true(hostOf(b).control.malformed === 0);
});

test.serial('control trust - a flood of hellos under new names does not grow a worker’s member list past its bound', async (t) => {
  const { agents, ns } = await inProcessGroup(t);
  const nc = await attacker(t);
  const flooder = new Identity();
  for (let i = 0; i < 5_000; i++) {
    nc.publish(`${ns}.tb.members`, defaultCodec.encode(signedBy(flooder, { k: 'hello', n: `ghost${i}`, id: 100 + i, inst: `g${i}`, t: 0, q: 1 })));
  }
  await nc.flush();
  // A deadline for checking 5,000 signatures per agent beside another test file on 2 cores, not the bound under test.
  await eventually(() => agents.every((agent) => hostOf(agent).plugin(MEMBERSHIP).dropped >= 5_000 - 4_096), 60_000);
  for (const agent of agents) t.true(agent.workers().length <= 4_096, `${agent.workers().length} members`);
  const sum = await agents[0]!.rpcSync('b', addNumbers, [1, 2], { timeoutMs: 5_000 });
  t.is(sum, 3, 'the group still works');
});

test.serial('control trust - a call MAC shows its sender once: replays, other functions, other senders and tampered tags are not shown', (t) => {
  const alice = new Identity();
  const bob = new Identity();
  const mallory = new Identity();
  const keys: Record<string, string> = { alice: alice.dhKey, bob: bob.dhKey, mallory: mallory.dhKey };
  const fromAlice = new CallAuth(alice, 'alice', (name) => keys[name]);
  const fromMallory = new CallAuth(mallory, 'mallory', (name) => keys[name]);
  const bobChecks = new CallAuth(bob, 'bob', (name) => keys[name]);
  const sealed = Array.from({ length: 100 }, () => fromAlice.seal('bob', 0, 'test.noop')!);
  // Out of order within the window (a direct route overtaking the bus) is still shown, each counter once.
  for (const auth of [...sealed].reverse()) t.true(bobChecks.check('alice', 0, 'test.noop', auth));
  for (const auth of sealed.slice(0, 10)) t.false(bobChecks.check('alice', 0, 'test.noop', auth), 'a replay is not shown');
  const next = fromAlice.seal('bob', 0, 'test.noop')!;
  t.false(bobChecks.check('alice', 0, 'test.other', next), 'the MAC covers the function name');
  t.false(bobChecks.check('alice', 1, 'test.noop', next), 'the MAC covers the kind of call');
  const flipped = Buffer.from(next[1]);
  flipped[0] ^= 1;
  t.false(bobChecks.check('alice', 0, 'test.noop', [next[0], flipped]), 'a tampered tag is not shown');
  t.false(bobChecks.check('alice', 0, 'test.noop', fromMallory.seal('bob', 0, 'test.noop')), "mallory's MAC does not show alice");
  t.false(bobChecks.check('alice', 0, 'test.noop', [next[0], Buffer.from(next[1]).toString('base64url')]), 'a tag as text is not shown');
  t.false(bobChecks.check('alice', 0, 'test.noop', [next[0], next[1].subarray(0, 15)]), 'a short tag is not shown');
  t.true(bobChecks.check('alice', 0, 'test.noop', next), 'the untampered call is still shown once');
  t.is(bobChecks.unverified, 10 + 6);
});

test.serial('control trust - call MACs over many function names keep a bounded cache, and every name, however long, is still covered', (t) => {
  const alice = new Identity();
  const bob = new Identity();
  const keys: Record<string, string> = { alice: alice.dhKey, bob: bob.dhKey };
  const fromAlice = new CallAuth(alice, 'alice', (name) => keys[name]);
  const bobChecks = new CallAuth(bob, 'bob', (name) => keys[name]);
  // Names a caller chooses (a stranger may send any): what the callee keeps for them stays bounded.
  for (let i = 0; i < 3 * MAX_DIGESTS; i++) {
    const fn = `test.many.${i}`;
    t.true(bobChecks.check('alice', 0, fn, fromAlice.seal('bob', 0, fn)));
  }
  t.true(bobChecks.digestsHeld <= MAX_DIGESTS, `${bobChecks.digestsHeld} digests held`);
  t.true(fromAlice.digestsHeld <= MAX_DIGESTS);
  // A name too long to keep is digested each time, and still covered: a one-letter change is not shown.
  const long = `test.${'x'.repeat(5_000)}`;
  const sealed = fromAlice.seal('bob', 0, long)!;
  t.false(bobChecks.check('alice', 0, `${long.slice(0, -1)}y`, sealed), 'the MAC covers the whole long name');
  t.true(bobChecks.check('alice', 0, long, sealed));
  // Counters beyond 2^32 (their high bytes are in the block) are covered too.
  const late = fromAlice.seal('bob', 0, 'test.noop')!;
  t.false(bobChecks.check('alice', 0, 'test.noop', [late[0] + 2 ** 32, late[1]]), 'a counter differing only above 32 bits is not shown');
  t.true(bobChecks.check('alice', 0, 'test.noop', late));
});

test.serial('control trust processes - a spoofed bye for a live worker changes nothing: no call fails, RRefs keep working', async (t) => {
  const { agent, children, namespace } = await startProcessGroup(workerScript, 3, TIMING.fast);
  t.teardown(async () => {
    await agent.shutdown({ graceful: false });
    for (const child of children) child.kill('SIGKILL');
  });
  const nc = await attacker(t);
  const heard = new Map<string, Announcement>();
  nc.subscribe(`${namespace}.tb.members`, { callback: (_, m) => {
    const a = defaultCodec.decode(m.data) as Announcement;
    if (a.k === 'hb') heard.set(a.n, a);
  } });
  await eventually(() => heard.has('p1'));
  const rref = agent.remote('p1', echo, [42]);
  t.is(await rref.toHere(), 42);
  const calls = Array.from({ length: 10 }, (_, i) => agent.rpcSync('p1', sleep, [800, i], { timeoutMs: 10_000 }));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const hb = heard.get('p1')!;
  // Its own heartbeat turned into a bye (the signature no longer fits), and a bye signed by other keys.
  nc.publish(`${namespace}.tb.members`, defaultCodec.encode({ ...hb, k: 'bye', q: hb.q + 1_000 }));
  nc.publish(`${namespace}.tb.members`, defaultCodec.encode(signedBy(new Identity(), { k: 'bye', n: 'p1', id: hb.id, inst: hb.inst, t: hb.t, q: hb.q + 1_000 })));
  await nc.flush();
  t.deepEqual(await Promise.all(calls), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  t.true(agent.workers().some((w) => w.name === 'p1'));
  t.true((await agent.rpcSync('p2', membersSeen)).includes('p1'));
  t.is(await rref.toHere(), 42);
  t.is(await agent.rpcSync('p1', addNumbers, [2, 3]), 5);
  await rref.release();
});

test.serial('control trust processes - a call that claims another member’s name does not hold graceful shutdown', async (t) => {
  const { agent, children, namespace } = await startProcessGroup(workerScript, 3, TIMING.relaxed);
  t.teardown(() => {
    for (const child of children) child.kill('SIGKILL');
  });
  const nc = await attacker(t);
  for (let i = 0; i < 3; i++) {
    const reply = await nc.request(`${namespace}.tb.call.p1`, defaultCodec.encode([0, 'test.echo', [i], { from: 'p0' }]), { timeout: 10_000 });
    t.deepEqual(defaultCodec.decode(reply.data), [2, i], 'served as a stranger (OK_UNCOUNTED): not counted as a call from p0');
  }
  const exits = children.map((child) => once(child, 'exit'));
  await Promise.all(['p1', 'p2'].map((name) => agent.rpcSync(name, stop)));
  await t.notThrowsAsync(agent.shutdown({ timeoutMs: 8_000 }));
  const codes = (await Promise.all(exits)).map(([code]) => code);
  t.deepEqual(codes, [0, 0], 'both workers finished their graceful shutdown');
});

test.serial('control trust processes - spoofed and replayed heartbeats do not keep a dead worker alive', async (t) => {
  const { agent, children, namespace } = await startProcessGroup(workerScript, 3, TIMING.fast);
  t.teardown(async () => {
    await agent.shutdown({ graceful: false });
    for (const child of children) child.kill('SIGKILL');
  });
  const nc = await attacker(t);
  let last: Announcement | undefined;
  nc.subscribe(`${namespace}.tb.members`, { callback: (_, m) => {
    const a = defaultCodec.decode(m.data) as Announcement;
    if (a.k === 'hb' && a.n === 'p2') last = a;
  } });
  await eventually(() => last !== undefined);
  children[1]!.kill('SIGKILL');
  await once(children[1]!, 'exit');
  const forger = new Identity();
  let k = 0;
  const spoofing = setInterval(() => {
    const hb = last!;
    k++;
    nc.publish(`${namespace}.tb.members`, defaultCodec.encode(hb)); // replayed as it was
    nc.publish(`${namespace}.tb.members`, defaultCodec.encode({ ...hb, q: hb.q + k })); // renumbered
    nc.publish(`${namespace}.tb.members`, defaultCodec.encode(signedBy(forger, { k: 'hb', n: 'p2', id: hb.id, inst: hb.inst, t: hb.t, q: hb.q + k })));
  }, 50);
  t.teardown(() => clearInterval(spoofing));
  const started = Date.now();
  await eventually(() => !agent.workers().some((w) => w.name === 'p2'), 6_000);
  t.log(`declared failed after ${Date.now() - started} ms of spoofing`);
  // p1 hears the same spoofing: it declares p2 failed too (its clock started at its own last heartbeat from p2).
  let seenByP1 = await agent.rpcSync('p1', membersSeen);
  for (let tries = 0; seenByP1.includes('p2') && tries < 40; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    seenByP1 = await agent.rpcSync('p1', membersSeen);
  }
  t.false(seenByP1.includes('p2'));
  clearInterval(spoofing);
});
