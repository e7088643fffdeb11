import test from 'ava';
import { firstValueFrom, filter } from 'rxjs';
import { defaultCodec, DuplicateWorkerError, InvalidArgumentError, ShutdownError, WorkerUnavailableError, type InboundMessage, type SubscribeOptions, type Transport } from '@tensorbus/core';
import { decodeWithoutTensors } from '../src/tensors.js';
import { controlSubject, MEMBERS_SUBJECT } from '../src/agent/subjects.js';
import { Identity } from '../src/agent/identity.js';
import { signedText } from '../src/membership/heartbeat-beat.js';
import type { Announcement } from '../src/membership/membership-protocol.js';
import { initRpc, type RpcAgent, type WorkerInfo } from '../src/index.js';
import { addNumbers, sleep } from './fixtures/functions.js';
import { eventually, newGroup, startGroup, stopAll, transportKind, transportKinds } from './helpers.js';
import { stopEverything } from './helpers.js';
import { hostOf, MEMBERSHIP } from '../src/internal.js';

test.after.always(stopEverything);

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - membership - ${title}`;

  test(t('invalid and duplicate names are refused'), async (tt) => {
    const group = newGroup(kind);
    await tt.throwsAsync(initRpc({ name: 'has space', transport: group.transport() }), { instanceOf: InvalidArgumentError });
    await tt.throwsAsync(initRpc({ name: '', transport: group.transport() }), { instanceOf: InvalidArgumentError });
    await tt.throwsAsync(initRpc({ name: 'x'.repeat(128), transport: group.transport() }), { instanceOf: InvalidArgumentError });
    const a = await initRpc({ name: 'w', transport: group.transport() });
    const error = await tt.throwsAsync(initRpc({ name: 'w', transport: group.transport() }), { instanceOf: DuplicateWorkerError });
    tt.is(error!.code, 'DUPLICATE_WORKER');
    tt.is(await a.rpcSync('w', addNumbers, [1, 1]), 2, 'the first worker is unaffected');
    await a.shutdown();
  });

  test(t('two workers claiming one name at once: exactly one wins'), async (tt) => {
    const group = newGroup(kind);
    const results = await Promise.allSettled([
      initRpc({ name: 'same', transport: group.transport() }),
      initRpc({ name: 'same', transport: group.transport() }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    tt.is(won.length, 1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    tt.true(lost.reason instanceof DuplicateWorkerError);
    await (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof initRpc>>>).value.shutdown();
  });

  test(t('static group: initRpc resolves once all joined, ranks 0..n-1'), async (tt) => {
    const group = newGroup(kind);
    const first = initRpc({ name: 'r2', rank: 2, worldSize: 3, transport: group.transport() });
    let resolved = false;
    void first.then(() => (resolved = true));
    await new Promise((resolve) => setTimeout(resolve, 150));
    tt.false(resolved, 'waits for the others');
    const rest = await Promise.all([
      initRpc({ name: 'r0', rank: 0, worldSize: 3, transport: group.transport() }),
      initRpc({ name: 'r1', rank: 1, worldSize: 3, transport: group.transport() }),
    ]);
    const agents = [await first, ...rest];
    for (const agent of agents) tt.deepEqual(agent.workers(), [{ name: 'r0', id: 0 }, { name: 'r1', id: 1 }, { name: 'r2', id: 2 }]);
    await Promise.all(agents.map((a) => a.shutdown()));
  });

  test(t('static group: a second worker claiming a taken rank is refused with DuplicateWorkerError; the first keeps it'), async (tt) => {
    const group = newGroup(kind);
    const first = initRpc({ name: 'first', rank: 0, worldSize: 2, transport: group.transport() });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const error = await tt.throwsAsync(initRpc({ name: 'second', rank: 0, worldSize: 2, transport: group.transport() }), { instanceOf: DuplicateWorkerError });
    tt.is(error!.code, 'DUPLICATE_WORKER');
    tt.regex(error!.message, /rank 0/);
    const other = await initRpc({ name: 'other', rank: 1, worldSize: 2, transport: group.transport() });
    const a = await first;
    for (const agent of [a, other]) tt.deepEqual(agent.workers(), [{ name: 'first', id: 0 }, { name: 'other', id: 1 }]);
    tt.is(await other.rpcSync(0, addNumbers, [1, 2]), 3);
    await Promise.all([a.shutdown(), other.shutdown()]);
  });

  test(t('static group: two workers claiming one rank at once: exactly one wins, the group forms with it'), async (tt) => {
    const group = newGroup(kind);
    const claims = [
      initRpc({ name: 'x', rank: 1, worldSize: 2, transport: group.transport() }),
      initRpc({ name: 'y', rank: 1, worldSize: 2, transport: group.transport() }),
    ];
    const zero = initRpc({ name: 'z', rank: 0, worldSize: 2, transport: group.transport() });
    const results = await Promise.allSettled(claims);
    const won = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<typeof initRpc>>>).value);
    tt.is(won.length, 1);
    tt.true((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason instanceof DuplicateWorkerError);
    const z = await zero;
    await eventually(() => z.workers().length === 2);
    tt.deepEqual(z.workers(), [{ name: 'z', id: 0 }, { name: won[0]!.self.name, id: 1 }]);
    await Promise.all([z.shutdown(), won[0]!.shutdown()]);
  });

  test(t('dynamic group: workers joining at once get unique ids, final when initRpc resolves'), async (tt) => {
    const group = newGroup(kind);
    const names = ['j0', 'j1', 'j2', 'j3', 'j4', 'j5'];
    const agents = await Promise.all(names.map((name) => initRpc({ name, heartbeatMs: 100, failureTimeoutMs: 2_000, transport: group.transport() })));
    const ids = agents.map((a) => a.self.id);
    tt.is(new Set(ids).size, names.length, `ids at initRpc: ${ids.join(',')}`);
    tt.true(ids.every((id) => id >= 0 && id < names.length), `ids at initRpc: ${ids.join(',')}`);
    await eventually(() => agents.every((a) => a.workers().length === names.length && a.workers().every((w) => w.id >= 0)));
    // Past many heartbeats: nobody moved.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    tt.deepEqual(agents.map((a) => a.self.id), ids);
    const expected = names.map((name, i) => ({ name, id: ids[i]! })).sort((p, q) => p.id - q.id);
    for (const agent of agents) tt.deepEqual(agent.workers(), expected);
    // A newcomer after a departure gets an id no living worker holds.
    await agents[0]!.shutdown();
    const late = await initRpc({ name: 'late', transport: group.transport() });
    tt.false(ids.slice(1).includes(late.self.id), `late got ${late.self.id}`);
    await stopAll([...agents.slice(1), late]);
  });

  test(t('static group without ranks numbers workers by name'), async (tt) => {
    const group = newGroup(kind);
    const agents = await Promise.all(['c', 'a', 'b'].map((name) => initRpc({ name, worldSize: 3, transport: group.transport() })));
    tt.deepEqual(agents.map((a) => a.self.id), [2, 0, 1]);
    tt.is(await agents[1]!.rpcSync(2, addNumbers, [1, 2]), 3);
    await Promise.all(agents.map((a) => a.shutdown()));
  });

  test(t('dynamic group: membership$ follows joins and leaves, ids are unique'), async (tt) => {
    const group = newGroup(kind);
    const a = await initRpc({ name: 'a', transport: group.transport() });
    const views: WorkerInfo[][] = [];
    a.membership$.subscribe((list) => views.push(list));
    const b = await initRpc({ name: 'b', transport: group.transport() });
    const c = await initRpc({ name: 'c', transport: group.transport() });
    await eventually(() => a.workers().length === 3);
    const ids = new Set(a.workers().map((w) => w.id));
    tt.is(ids.size, 3);
    tt.deepEqual(c.workers().map((w) => w.name).sort(), ['a', 'b', 'c']);
    await b.shutdown();
    await eventually(() => a.workers().length === 2);
    tt.deepEqual(a.workers().map((w) => w.name), ['a', 'c']);
    tt.true(views.some((v) => v.length === 3));
    await tt.throwsAsync(async () => a.rpcSync('b', addNumbers, [1, 1]), { instanceOf: WorkerUnavailableError });
    tt.throws(() => a.getWorkerInfo('b'), { instanceOf: WorkerUnavailableError });
    await stopAll([a, c]);
  });

  // Serial: it times the failure detector, which the file's other tests, four kinds of them at once, would starve.
  test.serial(t('a worker that stops answering is declared gone; pending and new calls fail fast'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], { heartbeatMs: 100, failureTimeoutMs: 500 });
    const [a, b] = agents;
    // Heartbeat timers do not hold a process open, and a local transport has no socket that
    // would: keep this one alive until the failure is detected.
    const keepAlive = setInterval(() => undefined, 1_000);
    tt.teardown(() => clearInterval(keepAlive));
    const pending = tt.throwsAsync(a!.rpcSync('b', sleep, [30_000], { timeoutMs: 0 }), { instanceOf: WorkerUnavailableError });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const cut = Date.now();
    // Silence b without a goodbye: its heartbeats stop, as when its process dies.
    const silenced = hostOf(b!).plugin(MEMBERSHIP) as unknown as { announce(k: string): void; heartbeat: NodeJS.Timeout; beacon?: { remove(): void } };
    silenced.announce = () => undefined;
    clearInterval(silenced.heartbeat);
    // Its beacon's beats (NATS) stop with it too.
    silenced.beacon?.remove();
    const error = await pending;
    const elapsed = Date.now() - cut;
    tt.true(elapsed < 2_000, `declared gone after ${elapsed} ms`);
    tt.regex(error!.message, /'b'/);
    await tt.throwsAsync(async () => a!.rpcSync('b', addNumbers, [1, 1]), { instanceOf: WorkerUnavailableError });
    await stopAll(agents);
  });

  test(t('calls after shutdown reject with ShutdownError; initRpc again with the same name works'), async (tt) => {
    const group = newGroup(kind);
    const a = await initRpc({ name: 'again', transport: group.transport() });
    await a.shutdown();
    const error = await tt.throwsAsync(async () => a.rpcSync('again', addNumbers, [1, 1]), { instanceOf: ShutdownError });
    tt.is(error!.code, 'SHUTDOWN');
    tt.throws(() => a.rpcStream('again', addNumbers, []), { instanceOf: ShutdownError });
    const b = await initRpc({ name: 'again', transport: group.transport() });
    tt.is(await b.rpcSync('again', addNumbers, [2, 2]), 4);
    await b.shutdown();
  });

  // Serial: ava runs serial tests before the concurrent ones, so its agents do not load the timing tests below.
  test.serial(t('a membership message of an unknown kind or with a field of the wrong shape is dropped and counted, a control request for one answered SERIALIZATION; nothing changes'), async (tt) => {
    const group = newGroup(kind);
    const agents = await Promise.all(['a', 'b'].map((name) => initRpc({ name, transport: group.transport(), heartbeatMs: 100, failureTimeoutMs: 3_000 })));
    const [a, b] = agents as [RpcAgent, RpcAgent];
    const raw = await group.transport();
    tt.teardown(async () => {
      await stopAll(agents);
      await raw.close();
    });
    await eventually(() => [a, b].every((agent) => agent.workers().length === 2 && agent.workers().every((w) => w.id >= 0)));
    // A well-formed announcement of every signed kind, from a worker 'x' a knows nothing of.
    const x = new Identity();
    const wellFormed = (k: string): Record<string, unknown> => {
      const message = { k, n: 'x', id: 5, inst: 'x-inst', t: 1, q: 1, sk: x.signKey, xk: x.dhKey } as Announcement;
      return { ...message, sig: x.sign(signedText(message)) };
    };
    const wrong: Record<string, unknown[]> = { n: [42, 'has space', ''], id: [-2, 1.5, '5'], inst: [null, 7], t: [Number.NaN, '1'], q: [-1, 0.5], sk: ['short', 1], xk: [{}, ''], sig: [42, null] };
    const malformed: Array<Record<string, unknown>> = [{ k: 'welcome', n: 'x' }, { k: 42 }, { n: 'x' }, { k: 'query' }, { k: 'query', reply: 'tb.call.a' }];
    for (const k of ['hello', 'sync', 'hb', 'bye', 'here', 'claim', 'mine']) {
      const valid = wellFormed(k);
      for (const [field, values] of Object.entries(wrong)) {
        for (const value of [...values, undefined]) malformed.push({ ...valid, [field]: value });
      }
    }
    const membership = hostOf(a).plugin(MEMBERSHIP);
    const view = JSON.stringify([a.workers(), b.workers()]);
    const dropped = membership.dropped;
    for (const message of malformed) raw.publish(MEMBERS_SUBJECT, defaultCodec.encode(message));
    // A ping on the members subject means nothing there: dropped too.
    raw.publish(MEMBERS_SUBJECT, defaultCodec.encode({ k: 'ping' }));
    // A query answered on a status subject, sent last: once a answers it, a handled everything before it.
    let answered = false;
    raw.subscribe('tb.status.malformed', (m) => {
      if ((decodeWithoutTensors(m.data) as { n?: unknown }).n === 'a') answered = true;
    });
    raw.publish(MEMBERS_SUBJECT, defaultCodec.encode({ k: 'query', reply: 'tb.status.malformed' }));
    await eventually(() => answered);
    tt.is(membership.dropped, dropped + malformed.length + 1, 'every malformed message dropped and counted');
    // The control kinds (here, ping) asked for an answer: the typed error says what is wrong.
    for (const message of [{ k: 'here' }, { ...wellFormed('here'), q: -1 }, { ...wellFormed('here'), sk: 'short' }, { ...wellFormed('here'), n: 'has space' }]) {
      const answer = decodeWithoutTensors(await raw.request(controlSubject('a'), defaultCodec.encode(message), { timeoutMs: 2_000 })) as { ok?: boolean; error?: { code?: string; message?: string } };
      tt.is(answer.ok, false);
      tt.is(answer.error?.code, 'SERIALIZATION', JSON.stringify(message).slice(0, 60));
      tt.regex(answer.error?.message ?? '', /^malformed membership message 'here': /);
    }
    tt.is(membership.dropped, dropped + malformed.length + 5);
    tt.is(JSON.stringify([a.workers(), b.workers()]), view, 'neither view changed');
    tt.false(a.workers().some((w) => w.name === 'x') || hostOf(a).members.instanceOf('x') !== undefined, 'x was never taken in');
    tt.is(await a.rpcSync('b', addNumbers, [2, 3]), 5, 'calls go on');
  });

  test(t('membership$ emits the current list to late subscribers'), async (tt) => {
    const agents = await startGroup(kind, ['m1', 'm2']);
    const list = await firstValueFrom(agents[0]!.membership$.pipe(filter((l) => l.length === 2)));
    tt.deepEqual(list.map((w) => w.name).sort(), ['m1', 'm2']);
    await stopAll(agents);
  });
}

/**
 * A transport on which a worker hears id claims late, its own latest: two
 * workers claiming at once each hear the other's claim first, as when NATS
 * delivers two publishers' messages to two subscribers in opposite orders.
 */
function ownClaimsLate(inner: Transport, self: string, delayMs: number): Transport {
  return new Proxy(inner, {
    get(target, key) {
      if (key === 'subscribe') {
        return (subject: string, handler: (m: InboundMessage) => void, options?: SubscribeOptions) =>
          target.subscribe(subject, (m) => {
            const announced = decodeWithoutTensors(new Uint8Array(m.data.bytes)) as { k?: unknown; n?: unknown };
            if (subject !== MEMBERS_SUBJECT || announced?.k !== 'claim') handler(m);
            else setTimeout(() => handler(m), announced.n === self ? delayMs : delayMs / 3);
          }, options);
      }
      const value: unknown = Reflect.get(target, key, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

test('local - membership - two joiners that each hear the other claim an id before their own claim get 0 and 1: claims are ordered by start, not by arrival', async (t) => {
  const group = newGroup(transportKind('local'));
  const agents = await Promise.all(['p', 'q'].map(async (name) => initRpc({ name, heartbeatMs: 100, failureTimeoutMs: 2_000, transport: ownClaimsLate(await group.transport(), name, 150) })));
  t.deepEqual(agents.map((a) => a.self.id).sort(), [0, 1]);
  await stopAll(agents);
});
