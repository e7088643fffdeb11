import test, { type ExecutionContext } from 'ava';
import { connect as tcpConnect } from 'node:net';
import { Frame, TransportError } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { DirectClient, hostId, parseOffer, type NatsTransport } from '@tensorbus/nats-transport/internal';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';

/** The data plane's insides, for tests that break them on purpose. */
function planeOf(transport: NatsTransport): { server: { close(): void; port: number }; learnt: { bySubject: Map<string, { token: Buffer }> } } {
  return (transport as unknown as { direct: { server: { close(): void; port: number }; learnt: { bySubject: Map<string, { token: Buffer }> } } }).direct;
}

/** Two NATS transports on one fresh namespace, `b` echoing on `echo`; closed when the test ends, however it ends. */
async function pair(t: ExecutionContext, optionsA = {}, optionsB = {}) {
  const server = await sharedNatsServer();
  const namespace = `d${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const a = (await natsTransport({ servers: server.url, namespace, ...optionsA })) as NatsTransport;
  const b = (await natsTransport({ servers: server.url, namespace, ...optionsB })) as NatsTransport;
  b.subscribe('echo', (m) => m.respond(m.data));
  await b.flush();
  const close = async () => void (await Promise.all([a.close(), b.close()]));
  t.teardown(close);
  return { a, b, close };
}

function filled(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i += 997) bytes[i] = i % 253;
  return bytes;
}

function sameBytes(frame: Uint8Array | Frame, want: Uint8Array): boolean {
  const got = frame instanceof Frame ? frame.bytes : frame;
  return Buffer.compare(Buffer.from(got.buffer, got.byteOffset, got.byteLength), Buffer.from(want.buffer, want.byteOffset, want.byteLength)) === 0;
}

test('direct - large requests and replies travel on the data plane, both ways, intact', async (t) => {
  const { a, b, close } = await pair(t);
  for (const size of [128 * 1024, 4 << 20, (40 << 20) + 3]) {
    const payload = filled(size);
    t.true(sameBytes(await a.request('echo', payload, { timeoutMs: 30_000 }), payload), `${size} bytes`);
  }
  t.is(a.directStats.served, 3, 'the requester served its three requests');
  t.is(b.directStats.fetched, 3, 'the responder fetched them');
  t.is(b.directStats.served, 3, 'the responder served its three replies');
  t.is(a.directStats.fetched, 3, 'the requester fetched them');
  // Small payloads stay on NATS.
  await a.request('echo', new Uint8Array(1000));
  t.is(a.directStats.served, 3);
  await close();
});

test('direct - turned off, or unreachable, large payloads still arrive through NATS chunks', async (t) => {
  const off = await pair(t, { direct: false }, { direct: false });
  const payload = filled(3 << 20);
  t.true(sameBytes(await off.a.request('echo', payload, { timeoutMs: 30_000 }), payload));
  t.like(off.a.directStats, { fetched: 0, served: 0, calls: 0 });
  await off.close();

  // The receiver has no data plane: it ignores the offer and pulls chunks.
  const oneSided = await pair(t, {}, { direct: false });
  t.true(sameBytes(await oneSided.a.request('echo', payload, { timeoutMs: 30_000 }), payload));
  t.is(oneSided.b.directStats.fetched, 0);
  await oneSided.close();

  // The sender's data port is gone (a firewall, a crash of the port): the receiver falls back.
  const broken = await pair(t);
  planeOf(broken.a).server.close();
  const started = Date.now();
  t.true(sameBytes(await broken.a.request('echo', payload, { timeoutMs: 30_000 }), payload));
  t.true(Date.now() - started < 5_000, 'the fallback is immediate, not after a timeout');
  t.is(broken.b.directStats.fetched, 0);
  await broken.close();
});

test('direct - garbage on the data port drops that connection only; transfers go on', async (t) => {
  const { a, b, close } = await pair(t);
  const port = planeOf(a).server.port;
  const socket = tcpConnect({ host: '127.0.0.1', port });
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
  await new Promise((resolve) => socket.once('close', resolve));
  const payload = filled(1 << 20);
  t.true(sameBytes(await a.request('echo', payload, { timeoutMs: 30_000 }), payload));
  t.is(b.directStats.fetched, 1);
  await close();
});

test('direct - an unknown token is refused, and offers from another host are not tried', async (t) => {
  const { a, close } = await pair(t);
  const port = planeOf(a).server.port;
  const client = new DirectClient(2_000);
  const forged = parseOffer(`${hostId()} 127.0.0.1:${port} ${'ab'.repeat(16)}`)!;
  t.truthy(forged);
  await t.throwsAsync(client.fetch(forged, 10), { instanceOf: TransportError, message: /no longer offers/ });
  t.false(client.reachable({ ...forged, hostId: 'elsewhere/boot' }), 'a loopback address on another host is another machine');
  t.true(client.reachable({ ...forged, host: '10.1.2.3', hostId: 'elsewhere/boot' }), 'a routable address may be tried');
  t.is(parseOffer('not an offer'), undefined);
  t.is(parseOffer(`${hostId()} 127.0.0.1:99999 ${'ab'.repeat(16)}`), undefined);
  client.close();
  await close();
});

test('direct - a fan-out publish is fetched by every subscriber', async (t) => {
  const { a, b, close } = await pair(t);
  const c = (await natsTransport({ servers: (await sharedNatsServer()).url, namespace: (a as unknown as { prefix: string }).prefix.slice(0, -1) })) as NatsTransport;
  t.teardown(() => c.close());
  const payload = filled(2 << 20);
  const got = await new Promise<Uint8Array[]>((resolve) => {
    const seen: Uint8Array[] = [];
    const take = (m: { data: Frame }) => {
      seen.push(m.data.bytes);
      if (seen.length === 2) resolve(seen);
    };
    b.subscribe('fan', take);
    c.subscribe('fan', take);
    void Promise.all([b.flush(), c.flush()]).then(() => a.publish('fan', payload));
  });
  t.true(got.every((data) => sameBytes(data, payload)));
  t.is(b.directStats.fetched + c.directStats.fetched, 2);
  await c.close();
  await close();
});

/** A responder that alone serves `svc` (as a worker serves its call subject), echoing. */
function serveExclusive(transport: NatsTransport, subject = 'svc') {
  return transport.subscribe(subject, (m) => m.respond(m.data), { exclusive: true });
}

test('direct routes - after the first reply, requests to an exclusive subject skip the bus, small and large', async (t) => {
  const { a, b, close } = await pair(t);
  serveExclusive(b);
  await b.flush();
  const first = filled(100);
  t.true(sameBytes(await a.request('svc', first), first));
  t.is(a.directStats.calls, 0, 'the first request goes through NATS and learns the route');
  for (const size of [0, 100, 70_000, 4 << 20]) {
    const payload = filled(size);
    t.true(sameBytes(await a.request('svc', payload, { timeoutMs: 30_000 }), payload), `${size} bytes`);
  }
  t.is(a.directStats.calls, 4);
  t.is(b.directStats.answered, 4);
  t.is(b.directStats.fetched, 1, 'the 4 MB request was pulled by the responder');
  // A shared (non-exclusive) subject never offers a route.
  b.subscribe('shared', (m) => m.respond(m.data));
  await b.flush();
  await a.request('shared', filled(10));
  await a.request('shared', filled(10));
  t.is(a.directStats.calls, 4);
  await close();
});

test('direct routes - a withdrawn route falls back to the bus; a closed responder fails fast with WORKER_UNAVAILABLE', async (t) => {
  const { a, b, close } = await pair(t);
  const subscription = serveExclusive(b);
  await b.flush();
  await a.request('svc', filled(10));
  await a.request('svc', filled(10));
  t.is(a.directStats.calls, 1);
  // The responder moves: the old route is refused, the request is not lost.
  subscription.unsubscribe();
  serveExclusive(b);
  await b.flush();
  t.true(sameBytes(await a.request('svc', filled(20)), filled(20)));
  t.is(a.directStats.calls, 1, 'refused on the old route, answered through NATS');
  t.true(sameBytes(await a.request('svc', filled(30)), filled(30)));
  t.is(a.directStats.calls, 2, 'the new route was learnt from that reply');
  // The responder goes away with a request in flight.
  b.subscribe('slow', () => undefined, { exclusive: true });
  const c = (await natsTransport({ servers: (await sharedNatsServer()).url, namespace: (a as unknown as { prefix: string }).prefix.slice(0, -1) })) as NatsTransport;
  t.teardown(() => c.close());
  let answered = 0;
  c.subscribe('hang', (m) => (answered++ === 0 ? m.respond(m.data) : undefined), { exclusive: true });
  await c.flush();
  await a.request('hang', filled(5));
  const inFlight = a.request('hang', filled(5), { timeoutMs: 30_000 });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const started = Date.now();
  await c.close();
  await t.throwsAsync(inFlight, { code: 'WORKER_UNAVAILABLE' });
  t.true(Date.now() - started < 2_000, 'failed when the connection closed, not at the timeout');
  // Once nats-server has seen the connection go (it learns it on its own, a moment later), a new
  // request finds the route dead, takes the bus, and nobody answers there either.
  await new Promise((resolve) => setTimeout(resolve, 300));
  await t.throwsAsync(a.request('hang', filled(5), { timeoutMs: 5_000 }), { code: 'WORKER_UNAVAILABLE' });
  await close();
});

test('direct routes - a forged route token reaches nothing', async (t) => {
  const { a, b, close } = await pair(t);
  serveExclusive(b);
  await b.flush();
  await a.request('svc', filled(10));
  const routes = planeOf(a).learnt.bySubject;
  const [subject, route] = [...routes][0]!;
  routes.set(subject, { ...route, token: Buffer.alloc(16, 7) });
  t.true(sameBytes(await a.request('svc', filled(10)), filled(10)), 'refused directly, answered through NATS');
  t.is(b.directStats.answered, 0);
  await close();
});
