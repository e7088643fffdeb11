import test from 'ava';
import { PermissionDeniedError, TransportError } from '@tensorbus/core';
import { firstValueFrom, filter } from 'rxjs';
import { natsTransport, startNatsCluster, startNatsServer } from '../src/index.js';
import { sharedNatsServer } from '../src/testing/index.js';

test('nats - namespaces isolate groups on one server', async (t) => {
  const server = await sharedNatsServer();
  const a = await natsTransport({ servers: server.url, namespace: 'iso-a' });
  const b = await natsTransport({ servers: server.url, namespace: 'iso-b' });
  b.subscribe('echo', (m) => m.respond(m.data));
  await b.flush();
  await t.throwsAsync(a.request('echo', new Uint8Array(1), { timeoutMs: 1_000 }), { code: 'WORKER_UNAVAILABLE' });
  await Promise.all([a.close(), b.close()]);
});

test('nats - a request crosses a 3-node cluster', async (t) => {
  const cluster = await startNatsCluster({ size: 3 });
  t.teardown(() => cluster.stop());
  const a = await natsTransport({ servers: cluster.urls[0], namespace: 'cl' });
  const c = await natsTransport({ servers: cluster.urls[2], namespace: 'cl' });
  c.subscribe('echo', (m) => m.respond(m.data));
  await c.flush();
  // The subscription's interest reaches the other nodes a moment later: ask until it has.
  let echoed: Uint8Array | undefined;
  for (let attempt = 0; !echoed; attempt++) {
    try {
      echoed = (await a.request('echo', new Uint8Array([4, 2]), { timeoutMs: 5_000 })).bytes;
    } catch (error) {
      if ((error as { code?: string }).code !== 'WORKER_UNAVAILABLE' || attempt === 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  t.deepEqual([...echoed], [4, 2]);
  const big = new Uint8Array(3_000_000).fill(5);
  t.is((await a.request('echo', big, { timeoutMs: 30_000 })).byteLength, big.byteLength, 'chunked across the cluster');
  await Promise.all([a.close(), c.close()]);
});

const authConfig = `authorization {
  users = [
    { user: alice, password: wonderland },
    { user: bob, password: builder, permissions: { publish: { deny: ["secret.>"] }, subscribe: { deny: ["hidden.>"] } } }
  ]
}`;

test('nats - a wrong password is refused with PermissionDeniedError; the right one connects', async (t) => {
  const server = await startNatsServer({ config: authConfig });
  t.teardown(() => server.stop());
  const error = await t.throwsAsync(natsTransport({ servers: server.url, user: 'alice', pass: 'wrong', reconnect: false }), { instanceOf: PermissionDeniedError });
  t.regex(error!.message, /credentials/);
  const ok = await natsTransport({ servers: server.url, user: 'alice', pass: 'wonderland' });
  await ok.close();
  t.pass();
});

test('nats - a permission violation surfaces as PermissionDeniedError without crashing', async (t) => {
  const server = await startNatsServer({ config: authConfig });
  t.teardown(() => server.stop());
  const bob = await natsTransport({ servers: server.url, user: 'bob', pass: 'builder' });
  // The server names the denied subject: the request it concerns rejects at once.
  await t.throwsAsync(bob.request('secret.plans', new Uint8Array(1), { timeoutMs: 5_000 }), { instanceOf: PermissionDeniedError });
  const subscribeError = new Promise<Error>((resolve) => bob.subscribe('hidden.x', () => undefined, { onError: resolve }));
  t.true((await subscribeError) instanceof PermissionDeniedError);
  bob.subscribe('open', (m) => m.respond(m.data));
  await bob.flush();
  t.is((await bob.request('open', new Uint8Array([3]), { timeoutMs: 2_000 })).bytes[0], 3, 'the connection still works');
  await bob.close();
});

test('nats - a broken chunked transfer fails fast with TransportError', async (t) => {
  const server = await sharedNatsServer();
  const a = await natsTransport({ servers: server.url, namespace: 'brk', chunkTimeoutMs: 500 });
  const b = await natsTransport({ servers: server.url, namespace: 'brk', chunkTimeoutMs: 500 });
  // The responder starts to receive a large request, then its connection dies mid-transfer.
  b.subscribe('sink', (m) => m.respond(new Uint8Array(1)));
  await b.flush();
  const started = Date.now();
  const pending = a.request('sink', new Uint8Array(64_000_000), { timeoutMs: 0 });
  setTimeout(() => void b.close(), 30);
  await t.throwsAsync(pending, { instanceOf: TransportError });
  t.true(Date.now() - started < 5_000, 'failed within the chunk timeout, not the request timeout');
  await a.close();
});

test('nats - a server restart: status goes reconnecting then connected, and requests work again', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  const a = await natsTransport({ servers: server.url, namespace: 'rs' });
  const b = await natsTransport({ servers: server.url, namespace: 'rs' });
  b.subscribe('echo', (m) => m.respond(m.data));
  await b.flush();
  const reconnecting = firstValueFrom(a.status$.pipe(filter((s) => s === 'reconnecting')));
  await server.restart();
  await reconnecting;
  await firstValueFrom(a.status$.pipe(filter((s) => s === 'connected')));
  await firstValueFrom(b.status$.pipe(filter((s) => s === 'connected')));
  await b.flush();
  t.deepEqual([...(await a.request('echo', new Uint8Array([8]), { timeoutMs: 5_000 })).bytes], [8]);
  await Promise.all([a.close(), b.close()]);
});
