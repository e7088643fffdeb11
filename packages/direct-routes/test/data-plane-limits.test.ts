import test, { type ExecutionContext } from 'ava';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as natsConnect, headers } from 'nats';
import { connect as tcpConnect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { TransportError } from '@tensorbus/core';
import { bufferPoolStats } from '@tensorbus/core/internal';
import { natsTransport, startNatsServer } from '@tensorbus/nats-transport';
import {
  callHead,
  DirectClient,
  GET_BYTES,
  H_CHUNK,
  H_DIRECT,
  H_PULL,
  H_SIZE,
  H_TRANSFER,
  hostId,
  OP_REPLY,
  parseOffer,
  REPLY_NO_ROUTE,
  REPLY_OK,
  replyHeader,
  type NatsTransport,
} from '@tensorbus/nats-transport/internal';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { PeerConnection } from '../src/direct/peer-connection.js';
import { ReplySizeError } from '../src/direct/peer-replies.js';

/** The data port of a transport. */
function portOf(transport: NatsTransport): number {
  return (transport as unknown as { direct: { server: { port: number } } }).direct.server.port;
}

/** Two NATS transports on one fresh namespace, `b` echoing on its exclusive subject `echo`. */
async function pair(t: ExecutionContext, optionsB: object = {}, optionsA: object = {}) {
  const server = await sharedNatsServer();
  const namespace = `l${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const a = (await natsTransport({ servers: server.url, namespace, ...optionsA })) as NatsTransport;
  const b = (await natsTransport({ servers: server.url, namespace, ...optionsB })) as NatsTransport;
  b.subscribe('echo', (m) => m.respond(m.data), { exclusive: true });
  await b.flush();
  t.teardown(async () => void (await Promise.all([a.close(), b.close()])));
  return { a, b };
}

/** A TCP server on loopback that answers each request it reads with `answer(id)`. */
async function hostileServer(answer: (id: number, socket: Socket) => void, requestBytes = GET_BYTES): Promise<{ port: number; connections: () => number; server: Server }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    socket.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= requestBytes) {
        answer(pending.readUInt32BE(1), socket);
        pending = pending.subarray(requestBytes);
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as AddressInfo).port, connections: () => connections, server };
}

const token = Buffer.alloc(16, 0xab);

test('data plane limits - offers naming an address nothing should connect to are refused when parsed', (t) => {
  const offer = (host: string, port = 4000) => parseOffer(`${hostId()} ${host}:${port} ${token.toString('hex')}`);
  for (const host of ['0.0.0.0', '0.1.2.3', '[::]', '[0:0:0:0:0:0:0:0]', '224.0.0.1', '239.255.255.250', '255.255.255.255', '[ff02::1]', '[::ffff:0.0.0.0]', 'a b', 'x_y!']) {
    t.is(offer(host), undefined, host);
  }
  t.is(offer('127.0.0.1', 0), undefined, 'port 0');
  t.truthy(offer('127.0.0.1'));
  t.truthy(offer('10.1.2.3'));
  t.truthy(offer('[::1]'));
  t.truthy(offer('worker-3.cluster.local'));
});

test('data plane limits - a fetch answered with another size than announced fails before allocating, and the worker goes on', async (t) => {
  const hostile = await hostileServer((id, socket) => socket.write(replyHeader(id, REPLY_OK, 2 ** 50)));
  const client = new DirectClient(2_000);
  const offer = parseOffer(`${hostId()} 127.0.0.1:${hostile.port} ${token.toString('hex')}`)!;
  const before = bufferPoolStats().allocated;
  const error = await t.throwsAsync(client.fetch(offer, 1_000_000), { instanceOf: TransportError });
  t.regex(error!.message, /1125899906842624 bytes where 1000000 were announced/);
  t.is(bufferPoolStats().allocated, before, 'nothing was allocated for the reply');
  // One byte too many is refused as well.
  const offByOne = await hostileServer((id, socket) => socket.write(replyHeader(id, REPLY_OK, 1_000_001)));
  const other = parseOffer(`${hostId()} 127.0.0.1:${offByOne.port} ${token.toString('hex')}`)!;
  await t.throwsAsync(client.fetch(other, 1_000_000), { instanceOf: TransportError });
  client.close();
  hostile.server.close();
  offByOne.server.close();
});

test('data plane limits - a call reply over the limit fails that call only; the connection stays in step', async (t) => {
  let n = 0;
  const hostile = await hostileServer((id, socket) => {
    // The first reply is over the limit (its bytes follow), the second is fine.
    const size = n++ === 0 ? 5_000 : 10;
    socket.write(Buffer.concat([replyHeader(id, REPLY_OK, size), Buffer.alloc(size, 7)]));
  }, 5);
  const connection = new PeerConnection({ endpoint: 'hostile', host: '127.0.0.1', port: hostile.port, onBroken: () => undefined, maxReplyBytes: 1_000 });
  const head = (id: number) => {
    const frame = Buffer.alloc(5);
    frame.writeUInt32BE(id, 1);
    return frame;
  };
  const first = connection.request(head);
  const second = connection.request(head);
  await t.throwsAsync(first, { instanceOf: ReplySizeError });
  const reply = await second;
  t.is(reply.status, REPLY_OK);
  t.deepEqual([...reply.data.bytes], Array(10).fill(7));
  t.false(connection.broken);
  connection.close();
  hostile.server.close();
});

test.serial('data plane limits - tokenless calls declaring 2 GiB are refused before their bodies are kept; RSS does not grow', async (t) => {
  const { a, b } = await pair(t);
  const payload = new Uint8Array(100).fill(3);
  await a.request('echo', payload, { timeoutMs: 10_000 }); // learns the route
  const port = portOf(b);
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const body = Buffer.alloc(4 * 2 ** 20, 1);
  const sockets = await Promise.all(
    [0, 1, 2].map(async (i) => {
      const socket = tcpConnect({ host: '127.0.0.1', port });
      await once(socket, 'connect');
      const replies: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => replies.push(chunk));
      socket.write(callHead(1, token, 'whatever', 2 ** 31 - 2));
      // 200 MB of body each: buffered, it would show in RSS.
      for (let k = 0; k < 50; k++) if (!socket.write(body)) await once(socket, 'drain');
      // Meanwhile the well-behaved caller keeps working.
      t.deepEqual((await a.request('echo', payload, { timeoutMs: 10_000 })).bytes, payload, `during tokenless connection ${i}`);
      return { socket, replies };
    }),
  );
  await new Promise((resolve) => setTimeout(resolve, 200));
  const grown = process.memoryUsage().rss - rssBefore;
  t.true(grown < 150 * 2 ** 20, `RSS grew by ${Math.round(grown / 2 ** 20)} MB`);
  for (const { socket, replies } of sockets) {
    const reply = Buffer.concat(replies);
    t.is(reply[0], OP_REPLY);
    t.is(reply[5], REPLY_NO_ROUTE, 'answered "no such route" at once');
    socket.destroy();
  }
  // Declaring more than the port takes drops the connection.
  const greedy = tcpConnect({ host: '127.0.0.1', port });
  greedy.on('error', () => undefined);
  greedy.resume();
  await once(greedy, 'connect');
  greedy.write(callHead(1, token, 'whatever', 2 ** 40));
  await once(greedy, 'close');
  t.deepEqual((await a.request('echo', payload, { timeoutMs: 10_000 })).bytes, payload);
});

test.serial('data plane limits - 800 silent connections are not all held, silent and idle ones are closed, a caller keeps working', async (t) => {
  // The caller on TCP too, among the flood (through the Unix socket its calls would not wait for the port to accept any of it).
  const limits = { direct: { maxConnections: 64, firstRequestTimeoutMs: 500, idleTimeoutMs: 1_500, unixSockets: false } };
  const { a, b } = await pair(t, limits, limits);
  const payload = new Uint8Array(100).fill(5);
  await a.request('echo', payload, { timeoutMs: 10_000 }); // the caller's connection speaks first
  const port = portOf(b);
  let open = 0;
  let closed = 0;
  const sockets: Socket[] = [];
  for (let i = 0; i < 800; i++) {
    const socket = tcpConnect({ host: '127.0.0.1', port });
    socket.on('error', () => undefined);
    socket.on('connect', () => open++);
    socket.on('close', () => closed++);
    sockets.push(socket);
  }
  const callsBefore = b.directStats.answered;
  for (let i = 0; i < 10; i++) t.deepEqual((await a.request('echo', payload, { timeoutMs: 10_000 })).bytes, payload);
  t.is(b.directStats.answered - callsBefore, 10, 'on the direct route throughout');
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.true(800 - closed <= 64 + 1, `${800 - closed} connections still open`);
  // Silent ones go within a few times firstRequestTimeoutMs.
  const deadline = Date.now() + 5_000;
  while (closed < 800 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  t.is(closed, 800, 'every silent connection was closed');
  t.true(open > 0);
  // A connection that spoke once and then fell silent is closed once idle.
  const idle = tcpConnect({ host: '127.0.0.1', port });
  idle.on('error', () => undefined);
  idle.resume(); // reads its reply, so the port's close is seen
  await once(idle, 'connect');
  const get = Buffer.alloc(GET_BYTES);
  get[0] = 0x01;
  idle.write(get);
  const started = Date.now();
  await once(idle, 'close');
  t.true(Date.now() - started >= 1_000, 'not before it was idle');
  t.deepEqual((await a.request('echo', payload, { timeoutMs: 10_000 })).bytes, payload);
  for (const socket of sockets) socket.destroy();
});

test.serial('data plane limits - an announcement from another account through a service import, pointing at a hostile port, fails that transfer only', async (t) => {
  const config = join(mkdtempSync(join(tmpdir(), 'tb-conf-')), 'accounts.conf');
  writeFileSync(config, `accounts {
  SVC: { users: [ { user: svc, password: svcpass } ], exports: [ { service: "svc.echo" } ] }
  APP: { users: [ { user: app, password: apppass } ], imports: [ { service: { account: SVC, subject: "svc.echo" } } ] }
}
`);
  const server = await startNatsServer({ configFile: config });
  t.teardown(() => server.stop());
  const svc = await natsTransport({ servers: server.url, user: 'svc', pass: 'svcpass' });
  const app = await natsTransport({ servers: server.url, user: 'app', pass: 'apppass' });
  t.teardown(async () => void (await Promise.all([svc.close(), app.close()])));
  const errors: Error[] = [];
  svc.subscribe('svc.echo', (m) => m.respond(m.data), { exclusive: true, onError: (error) => errors.push(error) });
  await svc.flush();
  const hostile = await hostileServer((id, socket) => socket.write(replyHeader(id, REPLY_OK, 2 ** 50)));
  t.teardown(() => hostile.server.close());
  const raw = await natsConnect({ servers: server.url, user: 'app', pass: 'apppass' });
  const h = headers();
  h.set(H_TRANSFER, 'hostile.1');
  h.set(H_SIZE, '1000000');
  h.set(H_CHUNK, '65536');
  h.set(H_PULL, 'hostile.pull');
  h.set(H_DIRECT, `${hostId()} 127.0.0.1:${hostile.port} ${token.toString('hex')}`);
  raw.publish('svc.echo', new Uint8Array(0), { headers: h, reply: 'hostile.reply' });
  await raw.flush();
  const deadline = Date.now() + 5_000;
  while (hostile.connections() === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  t.is(hostile.connections(), 1, 'the responder fetched from the hostile port');
  // Still here, and still serving through the import.
  const payload = new Uint8Array([4, 2]);
  t.deepEqual([...(await app.request('svc.echo', payload, { timeoutMs: 5_000 })).bytes], [4, 2]);
  await raw.close();
});
