/**
 * The stats query over every transport: what a worker answers (identity,
 * backend, members, calls per function, errors by code, RRefs, contexts,
 * events, reported values), nothing measured before anyone asks, the rate
 * limit, and hostile queries and answers.
 */
import test from 'ava';
import { defaultCodec, RemoteError, type Transport } from '@tensorbus/core';
import { checkWorkerStats, initRpc, reportStat, type RpcAgent, type WorkerStats } from '../src/index.js';
import { controlSubject } from '../src/agent/subjects.js';
import { observing } from '../src/observe/switch.js';
import { hostOf } from '../src/agent/rpc-agent.js';
import { OBSERVE } from '../src/observe/plugin.js';
import { MEMBERSHIP } from '../src/membership/plugin.js';
import { listWorkers, queryStats } from '../src/observe/stats-reader.js';
import { REPLIES_PER_SECOND } from '../src/observe/stats-protocol.js';
import { Counter, echo, fail } from './fixtures/functions.js';
import { observedFields } from './fixtures/observe-functions.js';
import { eventually, newGroup, stopAll, transportKinds, type TransportKind } from './helpers.js';

const running: RpcAgent[] = [];
/** Worker `name` as a reader asks it: its name and the key its answers must be signed with. */
const worker = (name: string) => {
  const agent = [...running].reverse().find((a) => hostOf(a).name === name);
  return { name, signKey: agent ? hostOf(agent).plugin(MEMBERSHIP).identity.signKey : 'unknown' };
};
const readers: Transport[] = [];
test.after.always(async () => {
  await stopAll(running);
  await Promise.all(readers.map((r) => r.close().catch(() => undefined)));
});

/** Agents named `names` in a fresh namespace, and a plain client of it (not a member). */
async function group(kind: TransportKind, names: string[]): Promise<{ agents: RpcAgent[]; reader: Transport; join: (name: string) => Promise<RpcAgent> }> {
  const g = newGroup(kind);
  const join = async (name: string) => {
    const agent = await initRpc({ name, transport: g.transport(), heartbeatMs: 100, failureTimeoutMs: 600 });
    running.push(agent);
    return agent;
  };
  const agents = [];
  for (const name of names) agents.push(await join(name));
  const reader = await g.transport();
  readers.push(reader);
  return { agents, reader, join };
}

const served = (s: WorkerStats | undefined, fn: string) => s?.served.find((f) => f.fn === fn);
const sumBuckets = (f: { buckets: number[][] } | undefined, column: number) => (f?.buckets ?? []).reduce((n, b) => n + b[column]!, 0);

test.serial('observe - stats: nothing is measured before anyone asks; the first query turns measuring on', async (t) => {
  const { agents, reader } = await group(transportKinds()[0]!, ['s0a', 's0b']);
  const [a] = agents;
  for (let i = 0; i < 3; i++) await a!.rpcSync('s0b', echo, [i]);
  t.false(observing.on, 'no provider, no query: the call path is not observed');
  t.deepEqual(await a!.rpcSync('s0b', observedFields, []), { tc: null, prof: null }, 'an unobserved call carries nothing more');
  const first = await queryStats(reader, worker('s0b'));
  t.truthy(first);
  t.is(served(first, 'test.echo'), undefined, 'the calls before the first query were not measured');
  t.true(observing.on && observing.stats, 'a query turns measuring on');
  for (let i = 0; i < 4; i++) await a!.rpcSync('s0b', echo, [i]);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const second = await queryStats(reader, worker('s0b'));
  t.is(served(second, 'test.echo')?.total, 4);
  await reader.close();
});

test('observe - stats: a snapshot is checked field by field before use', (t) => {
  const good: WorkerStats = {
    v: 1, name: 'w', id: 0, host: 'h', pid: 1, startedAt: 1, uptimeS: 0, backend: 'cpu', transport: 'nats', routes: { x: 'shm' }, members: ['w'],
    window: 60, served: [{ fn: 'f', total: 1, buckets: [[1, 1, 0, 0.5, 0.5]] }], made: [], errors: { E: 1 }, inFlight: 0, rrefs: { owned: 0, used: 0 },
    contexts: 0, tensors: 0, tensorBytes: 0, wasmHeapBytes: 0, rssBytes: 0, heapUsedBytes: 0, events: [{ at: 1, kind: 'join', worker: 'x' }], reported: { loss: 0.5 },
  };
  t.is(checkWorkerStats(good), good);
  const broken: Array<Partial<Record<keyof WorkerStats, unknown>>> = [
    { v: 2 },
    { name: 'x'.repeat(200) },
    { id: 1.5 },
    { served: [{ fn: 'f', total: 1, buckets: [[1, 1, 0]] }] },
    { served: Array.from({ length: 33 }, () => ({ fn: 'f', total: 0, buckets: [] })) },
    { errors: { E: -1 } },
    { events: [{ at: 1, kind: 'boom', worker: 'x' }] },
    { reported: { loss: 'high' } },
    { members: 'everyone' },
    { tensors: Number.NaN },
  ];
  for (const change of broken) t.is(checkWorkerStats({ ...good, ...change }), undefined, JSON.stringify(change).slice(0, 60));
  t.is(checkWorkerStats(null), undefined);
  t.is(checkWorkerStats([1]), undefined);
});

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - observe - ${title}`;

  test.serial(t('stats: a worker answers with its identity, backend, members, calls per function, errors by code, RRefs and contexts'), async (tt) => {
    const { agents, reader } = await group(kind, ['sa', 'sb', 'sc']);
    const [a, b] = agents as [RpcAgent, RpcAgent];
    await queryStats(reader, worker('sb'));
    for (let i = 0; i < 5; i++) await a.rpcSync('sb', echo, [i]);
    await tt.throwsAsync(a.rpcSync('sb', fail, ['stats']), { instanceOf: RemoteError });
    const counter = a.remote('sb', Counter, [0]);
    await counter.toHere();
    reportStat(b, 'loss', 0.25);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const s = await b.distAutograd.context(() => queryStats(reader, worker('sb')));
    tt.truthy(s);
    tt.is(s!.name, 'sb');
    tt.is(s!.id, b.self.id);
    tt.is(s!.pid, process.pid);
    tt.true(['tensorflow', 'wasm', 'cpu'].includes(s!.backend));
    tt.is(s!.transport, kind.transport);
    tt.deepEqual([...s!.members].sort(), ['sa', 'sb', 'sc']);
    const echoes = served(s, 'test.echo');
    tt.is(echoes?.total, 5);
    tt.is(sumBuckets(echoes, 1), 5, 'five calls in the per-second buckets');
    tt.is(sumBuckets(echoes, 2), 0);
    tt.is(sumBuckets(served(s, 'test.fail'), 2), 1, 'the failed call is an error of its function');
    tt.is(s!.errors.REMOTE_ERROR, 1);
    tt.is(s!.rrefs.owned, 1);
    tt.is(s!.contexts, 1, 'the autograd context open on sb while it was asked');
    tt.is(s!.reported.loss, 0.25);
    const sa = await queryStats(reader, worker('sa'));
    tt.is(sa!.rrefs.used, 1);
    tt.is(sa!.made.find((f) => f.fn === 'test.echo')?.total, 5, 'the caller counts the calls it made');
    // Five calls in, the first one's reply has named the direct route, if the kind has one.
    tt.is(sa!.routes.sb, kind.route, 'the route of the last call to sb');
    await counter.release();
    await reader.close();
  });

  test.serial(t('stats: joins and leaves are events of the workers that saw them; the reader lists the members'), async (tt) => {
    const { agents, reader, join } = await group(kind, ['ea', 'eb']);
    const [a] = agents;
    const c = await join('ec');
    await eventually(() => a!.workers().length === 3);
    tt.deepEqual((await listWorkers(reader, 1_000)).map((w) => w.name).sort(), ['ea', 'eb', 'ec']);
    await c.shutdown();
    await eventually(() => a!.workers().length === 2);
    const s = await queryStats(reader, worker('ea'));
    tt.truthy(s!.events.find((e) => e.kind === 'join' && e.worker === 'ec'), JSON.stringify(s!.events));
    tt.truthy(s!.events.find((e) => e.kind === 'leave' && e.worker === 'ec'));
    tt.is(await queryStats(reader, worker('ec'), 60, 300), undefined, 'a worker that left does not answer');
    await reader.close();
  });

  test.serial(t('stats: queries beyond the rate limit go unanswered; a bad window gets the default; the worker goes on'), async (tt) => {
    const { agents, reader } = await group(kind, ['ra', 'rb']);
    const [a] = agents;
    // Aligned to the start of a second, so that the burst falls within one (on a loaded machine it may take two).
    await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20));
    const first = Math.floor(Date.now() / 1000);
    const asked = 3 * REPLIES_PER_SECOND;
    const answers = await Promise.all(Array.from({ length: asked }, () => queryStats(reader, worker('rb'), 60, 400)));
    const seconds = Math.floor(Date.now() / 1000) - first + 1;
    const answered = answers.filter(Boolean).length;
    tt.true(answered >= 1 && answered <= REPLIES_PER_SECOND * seconds, `${answered} answered in ${seconds} s`);
    // A reply sent but late (a loaded machine) is neither answered here nor dropped there.
    const dropped = hostOf(agents[1]!).plugin(OBSERVE).stats.dropped;
    tt.true(dropped >= asked - REPLIES_PER_SECOND * seconds && dropped <= asked - answered, `${dropped} dropped and counted`);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    for (const [w, expected] of [['x', 60], [-1, 60], [1e9, 60], [2.5, 60], [5, 5]] as const) {
      const reply = defaultCodec.decode(await reader.request(controlSubject('rb'), defaultCodec.encode({ k: 'stats', w }), { timeoutMs: 2_000 })) as { s: Uint8Array };
      tt.is(checkWorkerStats(defaultCodec.decode(reply.s))?.window, expected, `w: ${String(w)}`);
    }
    tt.is(await a!.rpcSync('rb', echo, ['fine']), 'fine');
    await reader.close();
  });
}

test.serial('observe - stats: a watched worker leaving answers one more query with the values it reported last; an unwatched one leaves at once', async (t) => {
  const { agents, reader } = await group(transportKinds()[0]!, ['s9a', 's9b']);
  const [a, b] = agents as [RpcAgent, RpcAgent];
  // Nobody asked a for stats: its shutdown does not wait for anyone.
  reportStat(a, 'epoch', 1);
  const unwatched = Date.now();
  await a.shutdown();
  t.true(Date.now() - unwatched < 1_000, `an unwatched worker left in ${Date.now() - unwatched} ms`);
  // A poller, as the dashboard: every 200 ms, keeping the last value it saw.
  reportStat(b, 'epoch', 59);
  let seen: number | undefined;
  let polling = true;
  const poller = (async () => {
    while (polling) {
      const stats = await queryStats(reader, worker('s9b'), 60, 500);
      if (stats) seen = stats.reported.epoch;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  await eventually(() => seen === 59);
  // The run's last value, reported just before the worker shuts down: the next poll must carry it.
  reportStat(b, 'epoch', 60);
  const leaving = Date.now();
  await b.shutdown();
  t.is(seen, 60, 'the poller saw the last value before the worker left');
  t.true(Date.now() - leaving < 3_000, `the wait is bounded: ${Date.now() - leaving} ms`);
  polling = false;
  await poller;
});
