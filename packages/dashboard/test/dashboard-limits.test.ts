/**
 * What a client of the dashboard's web server can make it hold, over real
 * sockets on 127.0.0.1: a page that does not read is dropped once it falls an
 * update behind; one address holding every listening slot, or more idle
 * connections than its share, does not lock out the next page; a connection
 * that sends nothing is closed after the idle timeout. The server is fed a
 * fixed state (the collector's own tests are dashboard-server.test.ts): the
 * limits are the web server's, the same over every transport.
 */
import test from 'ava';
import { connect, type Socket } from 'node:net';
import { request as httpRequest } from 'node:http';
import type { Collector, DashboardState } from '../src/collector.js';
import { FairSlots } from '../src/fair-slots.js';
import {
  MAX_CONNECTIONS_PER_ADDRESS,
  MAX_LISTENERS,
  MAX_LISTENERS_PER_ADDRESS,
  startDashboardServer,
  type DashboardServer,
  type DashboardServerOptions,
} from '../src/server.js';
import { eventually } from './helpers.js';

const opened: Socket[] = [];
const servers: DashboardServer[] = [];
test.afterEach.always(async () => {
  for (const socket of opened.splice(0)) socket.destroy();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A dashboard server whose every poll answers a state of about `bytes` bytes. */
async function serve(bytes: number, options: DashboardServerOptions = {}): Promise<{ server: DashboardServer; port: number }> {
  const state: DashboardState = { namespace: 'x'.repeat(bytes), server: 'test', at: 0, workers: [], events: [] };
  const collector = { poll: async () => ({ ...state, at: Date.now() }) } as unknown as Collector;
  const server = await startDashboardServer(collector, { port: 0, intervalMs: 50, ...options });
  servers.push(server);
  return { server, port: Number(new URL(server.url).port) };
}

/** A raw connection to 127.0.0.1:`port` that sends `text` (nothing when empty); it reads only when `reading`. */
async function raw(port: number, text: string, reading: boolean): Promise<Socket> {
  const socket = connect({ host: '127.0.0.1', port });
  opened.push(socket);
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  if (text) socket.write(text);
  if (reading) socket.resume();
  else socket.pause();
  return socket;
}

const eventsRequest = 'GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';

/** Listens to /events for `ms` as a browser would; resolves with the status and the updates read. */
function listen(port: number, ms: number): Promise<{ status: number; updates: number }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/events' }, (response) => {
      response.setEncoding('utf8');
      let updates = 0;
      response.on('data', (d: string) => (updates += d.split('data: ').length - 1));
      setTimeout(() => {
        response.destroy();
        resolve({ status: response.statusCode ?? 0, updates });
      }, ms);
    });
    req.on('error', reject);
    req.end();
  });
}

const isOpen = (socket: Socket) => !socket.destroyed && socket.readyState === 'open';
const closed = (socket: Socket) => new Promise((resolve) => (socket.destroyed ? resolve(undefined) : socket.once('close', resolve)));

test.serial('dashboard limits - a page that does not read is dropped once it falls an update behind; pages that read keep their updates', async (t) => {
  const { server, port } = await serve(512 * 1024, { poll: 'always' });
  await Promise.all(Array.from({ length: 4 }, () => raw(port, eventsRequest, false)));
  const reader = listen(port, 4_000);
  await eventually(() => server.listening === 5, 2_000);
  // Each stalled socket holds what the kernel buffers take; then its writes back up and it is dropped.
  await eventually(() => server.listening === 1, 15_000);
  const read = await reader;
  t.is(read.status, 200);
  t.true(read.updates >= 10, `${read.updates} updates reached the page that reads`);
});

test.serial('dashboard limits - one address holding every listening slot does not lock out the next page', async (t) => {
  const { server, port } = await serve(100);
  await Promise.all(Array.from({ length: MAX_LISTENERS }, () => raw(port, eventsRequest, true)));
  await eventually(() => server.listening <= MAX_LISTENERS_PER_ADDRESS, 5_000);
  const page = await listen(port, 600);
  t.is(page.status, 200);
  t.true(page.updates >= 1, 'the new page gets updates');
  t.true(server.listening <= MAX_LISTENERS_PER_ADDRESS, `${server.listening} pages listening from one address`);
});

test.serial('dashboard limits - idle connections beyond an address\'s share are closed, oldest first, and the next request is served', async (t) => {
  const { port } = await serve(100);
  const idle: Socket[] = [];
  for (let i = 0; i < MAX_CONNECTIONS_PER_ADDRESS + 16; i++) idle.push(await raw(port, '', true));
  const page = await new Promise<number>((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path: '/' }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    }).on('error', reject).end();
  });
  t.is(page, 200);
  await eventually(() => idle.filter(isOpen).length <= MAX_CONNECTIONS_PER_ADDRESS, 5_000);
  t.false(isOpen(idle[0]!), 'the oldest went first');
  t.true(isOpen(idle[idle.length - 1]!), 'the newest stays');
});

test.serial('dashboard limits - a connection that sends nothing, or never finishes its headers, is closed after the idle timeout', async (t) => {
  const { port } = await serve(100, { idleTimeoutMs: 1_000 });
  const started = Date.now();
  const silent = await raw(port, '', true);
  const slow = await raw(port, 'GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n', true);
  await Promise.race([Promise.all([closed(silent), closed(slow)]), new Promise((resolve) => setTimeout(resolve, 5_000))]);
  t.false(isOpen(silent), 'a silent connection was closed');
  t.false(isOpen(slow), 'a request without the end of its headers was closed');
  t.true(Date.now() - started < 5_000);
});

test('dashboard limits - fair slots: one address filling every slot evicts only its own, and another address always gets in', (t) => {
  const evicted: string[] = [];
  const slots = new FairSlots<string>(4, 3, (holder) => evicted.push(holder));
  for (const h of ['a1', 'a2', 'a3', 'a4']) slots.admit('a', h);
  t.deepEqual(evicted, ['a1'], 'a fourth holder of one address evicts its oldest');
  slots.admit('b', 'b1');
  t.is(slots.size, 4);
  t.deepEqual(evicted, ['a1']);
  slots.admit('c', 'c1');
  t.deepEqual(evicted, ['a1', 'a2'], 'when full, the busiest address loses its oldest');
  t.is(slots.heldBy('b'), 1);
  t.is(slots.heldBy('c'), 1);
  slots.release('b', 'b1');
  slots.release('b', 'b1');
  t.is(slots.size, 3, 'a release counts once');
  t.deepEqual([...slots].sort(), ['a3', 'a4', 'c1']);
});
