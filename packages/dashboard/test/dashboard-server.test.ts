/**
 * The dashboard's server over every transport (without a browser): the
 * page, the state with workers, calls and a departure, polling only while a
 * page listens, and requests refused (another Host, other methods). What a
 * client can make the server hold: dashboard-limits.test.ts.
 */
import test from 'ava';
import { request as httpRequest } from 'node:http';
import type { Transport } from '@tensorbus/core';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import { startDashboard } from '../src/dashboard.js';
import type { DashboardState } from '../src/collector.js';
import { echo } from './fixtures/functions.js';
import { eventually, newGroup, stopAll, transportKinds } from './helpers.js';

const running: RpcAgent[] = [];
const closers: Array<() => Promise<void>> = [];
test.after.always(async () => {
  await Promise.all(closers.map((close) => close().catch(() => undefined)));
  await stopAll(running);
});

/** GET `path` with `headers`; resolves with status and body (an event stream is read for `streamMs`). */
function get(url: string, path: string, headers: Record<string, string> = {}, method = 'GET', streamMs = 0): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(new URL(path, url), { method, headers }, (response) => {
      let body = '';
      response.on('data', (d: Buffer) => (body += d));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
      if (streamMs > 0) setTimeout(() => {
        response.destroy();
        resolve({ status: response.statusCode ?? 0, body });
      }, streamMs);
    });
    req.on('error', reject);
    req.end();
  });
}

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - dashboard - ${title}`;

  test.serial(t('a worker that comes back under its name as a new incarnation is listed as a restart event'), async (tt) => {
    const g = newGroup(kind);
    const options = { transport: g.transport(), heartbeatMs: 100, failureTimeoutMs: 600 };
    const ra = await initRpc({ name: 'ra', ...options });
    const first = await initRpc({ name: 'rb', ...options, transport: g.transport() });
    running.push(ra, first);
    const dashboard = await startDashboard({ transport: await g.transport(), namespace: g.namespace, server: kind.name, port: 0, intervalMs: 200 });
    closers.push(() => dashboard.close());
    const state = async () => JSON.parse((await get(dashboard.url, '/state.json')).body) as DashboardState;
    await eventually(() => ra.workers().length === 2);
    await first.shutdown({ graceful: false });
    await eventually(() => ra.workers().length === 1);
    const second = await initRpc({ name: 'rb', ...options, transport: g.transport() });
    running.push(second);
    let events: DashboardState['events'] = [];
    for (const deadline = Date.now() + 10_000; Date.now() < deadline && !events.some((e) => e.kind === 'restart'); ) {
      events = (await state()).events;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    tt.true(events.some((e) => e.kind === 'restart' && e.worker === 'rb'), `events: ${JSON.stringify(events)}`);
    tt.false(events.some((e) => e.kind === 'restart' && e.worker === 'ra'), 'only the worker that came back');
    await dashboard.close();
    await stopAll([ra, second]);
  });

  test.serial(t('serves the page and the state: workers, their calls, and a departure'), async (tt) => {
    const g = newGroup(kind);
    const agents: RpcAgent[] = [];
    for (const name of ['da', 'db', 'dc']) agents.push(await initRpc({ name, transport: g.transport(), heartbeatMs: 100, failureTimeoutMs: 600 }));
    running.push(...agents);
    const reader: Transport = await g.transport();
    const dashboard = await startDashboard({ transport: reader, namespace: g.namespace, server: kind.name, port: 0, intervalMs: 200 });
    closers.push(() => dashboard.close());
    const page = await get(dashboard.url, '/');
    tt.is(page.status, 200);
    tt.regex(page.body, /<title>tensorbus dashboard<\/title>/);
    tt.regex(page.body, /new EventSource\('events'\)/);
    const state = async () => JSON.parse((await get(dashboard.url, '/state.json')).body) as DashboardState;
    const first = await state();
    tt.deepEqual(first.workers.map((w) => w.name), ['da', 'db', 'dc']);
    tt.true(first.workers.every((w) => w.state === 'up' && w.stats?.name === w.name));
    for (let i = 0; i < 10; i++) await agents[0]!.rpcSync('db', echo, [i]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await state();
    tt.is(second.workers.find((w) => w.name === 'db')?.stats?.served.find((f) => f.fn === 'test.echo')?.total, 10);
    await agents[2]!.shutdown();
    let last = second;
    await eventually(() => {
      void state().then((s) => (last = s));
      return last.workers.find((w) => w.name === 'dc')?.state === 'left';
    }, 10_000);
    tt.truthy(last.events.find((e) => e.kind === 'leave' && e.worker === 'dc'), JSON.stringify(last.events));
  });

  test.serial(t('pushes the state as server-sent events while a page listens, and polls nobody otherwise'), async (tt) => {
    const g = newGroup(kind);
    const agent = await initRpc({ name: 'ea', transport: g.transport(), heartbeatMs: 100, failureTimeoutMs: 600 });
    running.push(agent);
    const dashboard = await startDashboard({ transport: await g.transport(), namespace: g.namespace, server: kind.name, port: 0, intervalMs: 100 });
    closers.push(() => dashboard.close());
    await new Promise((resolve) => setTimeout(resolve, 300));
    tt.is(dashboard.last, undefined, 'nobody listened: nothing polled');
    const stream = await get(dashboard.url, '/events', {}, 'GET', 1_200);
    tt.is(stream.status, 200);
    const frames = stream.body.split('\n\n').filter((f) => f.startsWith('data: '));
    tt.true(frames.length >= 2, `${frames.length} updates pushed`);
    const pushed = JSON.parse(frames[frames.length - 1]!.slice('data: '.length)) as DashboardState;
    tt.deepEqual(pushed.workers.map((w) => w.name), ['ea']);
    // A poll under way when the page left may still finish (one membership query, 500 ms).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const at = dashboard.last!.at;
    await new Promise((resolve) => setTimeout(resolve, 800));
    tt.is(dashboard.last!.at, at, 'the page went away: polling stopped');
  });
}

test.serial('dashboard - refuses another Host header, other methods and unknown paths', async (t) => {
  const kind = transportKinds()[0]!;
  const g = newGroup(kind);
  const dashboard = await startDashboard({ transport: await g.transport(), namespace: g.namespace, server: kind.name, port: 0, intervalMs: 1_000 });
  closers.push(() => dashboard.close());
  t.is((await get(dashboard.url, '/', { host: 'evil.example:8265' })).status, 403, 'a page elsewhere resolving to loopback cannot read it');
  t.is((await get(dashboard.url, '/', { host: 'localhost:1' })).status, 200);
  t.is((await get(dashboard.url, '/', {}, 'POST')).status, 405);
  t.is((await get(dashboard.url, '/../../etc/passwd')).status, 404);
});
