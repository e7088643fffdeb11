import test, { type ExecutionContext } from 'ava';
import { Frame, RequestFailure, RpcTimeoutError, ShutdownError, WorkerUnavailableError, type Transport } from '@tensorbus/core';
import { acquireFrame } from '@tensorbus/core/internal';
import type { DirectStats } from '../src/index.js';
import type { NatsTransport } from '../src/internal.js';
import { connectRawNats, sharedNatsServer, transportKinds, type KindTransport, type TransportKind } from '../src/testing/index.js';

/**
 * Two transports on one fresh namespace. `b` serves `echo` alone, as a worker
 * serves its calls (on NATS its first reply names the direct route, and that
 * reply is had here: later requests take the kind's route), `any.echo` as one
 * of a queue group (always the bus), and `slow` and `silent`. Both are
 * closed when the test ends, whether it passed or not.
 */
async function pair(tt: ExecutionContext, kind: TransportKind, options = {}): Promise<{ a: KindTransport; b: KindTransport; namespace: string; close(): Promise<void> }> {
  const namespace = `c${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const a = await kind.create({ namespace, ...options });
  const b = await kind.create({ namespace, ...options });
  tt.teardown(() => Promise.all([a.close(), b.close()]));
  b.subscribe('echo', (m) => m.respond(m.data), { exclusive: true });
  b.subscribe('any.echo', (m) => m.respond(m.data), { queue: 'echoes' });
  b.subscribe('slow', (m) => setTimeout(() => m.respond(m.data), 300).unref());
  b.subscribe('silent', () => undefined);
  await b.flush();
  (await a.request('echo', new Uint8Array(1), { timeoutMs: 10_000 })).release();
  return { a, b, namespace, close: async () => void (await Promise.all([a.close(), b.close()])) };
}

/** `size` bytes of a pattern {@link samePattern} checks, in a pooled frame (in shared memory where the process has it, as a worker's encoded calls are). */
function pattern(size: number): Frame {
  const frame = acquireFrame(size);
  const bytes = frame.bytes;
  bytes.fill(0);
  for (let i = 0; i < size; i += 4096) bytes[i] = (i / 4096) % 251;
  if (size > 0) bytes[size - 1] = 7;
  return frame;
}

function samePattern(t: { is(a: unknown, b: unknown, m?: string): void }, got: Uint8Array, size: number): void {
  t.is(got.byteLength, size, 'length');
  for (const i of [0, 4096, Math.floor(size / 2 / 4096) * 4096, size - 1]) if (i >= 0 && i < size) t.is(got[i], i === size - 1 ? 7 : (i / 4096) % 251, `byte ${i}`);
}

/** Sends `size` pattern bytes to `subject` and checks the echo; both frames are let go. */
async function echoed(t: { is(a: unknown, b: unknown, m?: string): void }, transport: Transport, subject: string, size: number, timeoutMs = 60_000): Promise<void> {
  const sent = pattern(size);
  try {
    const reply = await transport.request(subject, sent, { timeoutMs });
    samePattern(t, reply.bytes, size);
    reply.release();
  } finally {
    sent.release();
  }
}

/** What went beside the bus (zero for a transport without a data plane). */
function directStats(transport: Transport): DirectStats | undefined {
  return (transport as Partial<NatsTransport>).directStats;
}

/** Counts the messages the nats-server delivers on `subject` of `namespace`, seen from a connection of its own. */
async function busWatch(namespace: string, subject: string): Promise<{ count(): Promise<number>; close(): Promise<void> }> {
  const nc = await connectRawNats({ servers: (await sharedNatsServer()).url });
  let seen = 0;
  nc.subscribe(`${namespace}.${subject}`, { callback: () => seen++ });
  await nc.flush();
  return {
    // After a round trip to the server, whatever it delivered before has been counted.
    count: async () => (await nc.flush(), seen),
    close: () => nc.close(),
  };
}

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - transport - ${title}`;

  test(t(`requests to a subject one subscriber serves take the ${kind.route} route once its first reply named it; a queue group's stay on the bus`), async (tt) => {
    const { a, namespace, close } = await pair(tt, kind);
    tt.is(a.routeOf?.('echo'), kind.route, 'the route the transport says a call takes');
    tt.is(a.routeOf?.('any.echo'), kind.transport === 'local' ? 'in-process' : 'nats');
    const bus = kind.transport === 'nats' ? await busWatch(namespace, 'echo') : undefined;
    if (bus) tt.teardown(() => bus.close());
    const before = directStats(a);
    const calls = 3;
    for (let i = 0; i < calls; i++) await echoed(tt, a, 'echo', 1 << 20);
    if (kind.route === 'in-process') {
      // One route only: the in-process bus.
      tt.is(a.kind, 'local');
    } else {
      const after = directStats(a)!;
      tt.is(await bus!.count(), kind.route === 'nats' ? calls : 0, 'requests the nats-server carried');
      tt.is(after.calls - before!.calls, kind.route === 'nats' ? 0 : calls, 'requests answered on a direct route');
      tt.is(after.sharedRequests - before!.sharedRequests, kind.route === 'shm' ? calls : 0, 'requests sent in shared memory');
    }
    await close();
  });

  test(t('request/reply, publish/subscribe, wildcards and queue groups'), async (tt) => {
    const { a, b, close } = await pair(tt, kind);
    tt.deepEqual([...(await a.request('echo', new Uint8Array([1, 2, 3]))).bytes], [1, 2, 3]);
    const seen: string[] = [];
    b.subscribe('news.*', (m) => seen.push(m.subject));
    b.subscribe('deep.>', (m) => seen.push(m.subject));
    let grouped = 0;
    b.subscribe('work', () => grouped++, { queue: 'q' });
    b.subscribe('work', () => grouped++, { queue: 'q' });
    await b.flush();
    a.publish('news.today', new Uint8Array([1]));
    a.publish('deep.a.b', new Uint8Array([1]));
    a.publish('news.a.b', new Uint8Array([1]));
    for (let i = 0; i < 10; i++) a.publish('work', new Uint8Array([i]));
    await a.flush();
    await new Promise((resolve) => setTimeout(resolve, 100));
    tt.deepEqual(seen.sort(), ['deep.a.b', 'news.today']);
    tt.is(grouped, 10, 'each queue-group message reaches exactly one member');
    await close();
  });

  test(t('timeouts, no responders and abort'), async (tt) => {
    const { a, close } = await pair(tt, kind);
    await tt.throwsAsync(a.request('silent', new Uint8Array(1), { timeoutMs: 100 }), { instanceOf: RpcTimeoutError });
    await tt.throwsAsync(a.request('nobody.here', new Uint8Array(1), { timeoutMs: 2_000 }), { instanceOf: WorkerUnavailableError });
    await tt.throwsAsync(a.request('echo', new Uint8Array(1), { signal: AbortSignal.abort() }), { name: 'AbortError' });
    const controller = new AbortController();
    const pending = a.request('slow', new Uint8Array(1), { signal: controller.signal });
    controller.abort();
    await tt.throwsAsync(pending, { name: 'AbortError' });
    tt.is((await a.request('slow', new Uint8Array([9]), { timeoutMs: 0 })).bytes[0], 9, 'timeout 0 waits');
    await close();
  });

  test(t('a request ends at once through its canceller, with the reason given; a cancel after the reply changes nothing'), async (tt) => {
    const { a, b, close } = await pair(tt, kind);
    // Exclusive, as a worker's call subject: on NATS, once answered, later requests take the direct route.
    b.subscribe('held', (m) => setTimeout(() => m.respond(m.data), 300).unref(), { exclusive: true });
    await b.flush();
    tt.is((await a.request('held', new Uint8Array([1]), { timeoutMs: 5_000 })).bytes[0], 1);
    for (const subject of ['slow', 'held']) {
      let cancel: ((reason: Error) => void) | undefined;
      const started = Date.now();
      const pending = a.request(subject, new Uint8Array([2]), { timeoutMs: 0, canceller: (c) => (cancel = c) });
      tt.truthy(cancel, 'the canceller is handed out during the request');
      const reason = new WorkerUnavailableError('the callee left');
      cancel!(reason);
      const error = await tt.throwsAsync(pending);
      tt.is(error, reason, `${subject}: rejected with the reason given`);
      tt.true(Date.now() - started < 250, `${subject}: at once, not when the reply came`);
      // Answered first, cancelled after: the caller keeps its reply.
      let late: ((reason: Error) => void) | undefined;
      const reply = await a.request(subject, new Uint8Array([3]), { timeoutMs: 5_000, canceller: (c) => (late = c) });
      late!(new Error('too late'));
      tt.is(reply.bytes[0], 3);
    }
    tt.is((await a.request('echo', new Uint8Array([4]), { timeoutMs: 5_000 })).bytes[0], 4, 'the transport goes on');
    await close();
  });

  test(t('a request nobody serves and one whose responder goes away fail with different reasons'), async (tt) => {
    const { a, b, close } = await pair(tt, kind);
    let received = 0;
    // Exclusive, as a worker's call subject: on NATS the first reply teaches the direct route.
    b.subscribe('once', (m) => {
      if (++received === 1) m.respond(m.data);
    }, { exclusive: true });
    await b.flush();
    const nobody = await tt.throwsAsync(a.request('nobody.here', new Uint8Array(1), { timeoutMs: 5_000 }), { instanceOf: WorkerUnavailableError });
    tt.is(nobody!.reason, RequestFailure.NoResponders);
    tt.is((await a.request('once', new Uint8Array([5]), { timeoutMs: 5_000 })).bytes[0], 5);
    // The bus cannot see a responder's end go away (see Transport.request): there a request ends at its
    // timeout (a worker's calls end sooner, when membership declares the callee failed). Every other route sees it.
    const blind = kind.route === 'nats';
    const pending = a.request('once', new Uint8Array([6]), { timeoutMs: blind ? 2_000 : 0 });
    const deadline = Date.now() + 5_000;
    while (received < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    tt.is(received, 2, 'the second request reached its responder');
    // The responder's end goes away without answering, as when its process dies.
    await b.close();
    if (blind) {
      await tt.throwsAsync(pending, { instanceOf: RpcTimeoutError });
    } else {
      const lost = await tt.throwsAsync(pending, { instanceOf: WorkerUnavailableError });
      tt.is(lost!.reason, RequestFailure.ResponderLost);
    }
    await close();
  });

  test(t('closing a transport with a request pending that it serves itself rejects it with ShutdownError, not as a lost responder'), async (tt) => {
    const { a, close } = await pair(tt, kind);
    let received = 0;
    a.subscribe('self.silent', () => received++);
    await a.flush();
    const pending = a.request('self.silent', new Uint8Array(1), { timeoutMs: 0 });
    const deadline = Date.now() + 5_000;
    while (received === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    tt.is(received, 1);
    await a.close();
    await tt.throwsAsync(pending, { instanceOf: ShutdownError });
    await close();
  });

  test(t('1,000 requests in flight are all answered with their own data'), async (tt) => {
    const { a, close } = await pair(tt, kind);
    const replies = await Promise.all(Array.from({ length: 1_000 }, (_, i) => a.request('echo', new Uint8Array([i & 255, i >> 8]), { timeoutMs: 20_000 })));
    tt.true(replies.every((r, i) => r.bytes[0] === (i & 255) && r.bytes[1] === i >> 8));
    await close();
  });

  test(t('payloads of 0 bytes, 1 KB, 1 MB + 1 and 40 MB round-trip, to one subscriber and to a queue group'), async (tt) => {
    const { a, close } = await pair(tt, kind);
    for (const subject of ['echo', 'any.echo']) {
      for (const size of [0, 1_024, 1_048_577, 40_000_000]) await echoed(tt, a, subject, size);
    }
    await close();
  });

  test.serial(t('a 400 MB payload round-trips'), async (tt) => {
    const { a, close } = await pair(tt, kind);
    await echoed(tt, a, 'echo', 400_000_000, 120_000);
    await close();
  });

  test(t('closing rejects pending requests with ShutdownError; a closed transport refuses work'), async (tt) => {
    const { a, close } = await pair(tt, kind);
    const pending = a.request('silent', new Uint8Array(1));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await a.close();
    await tt.throwsAsync(pending, { instanceOf: ShutdownError });
    await tt.throwsAsync(a.request('echo', new Uint8Array(1)), { instanceOf: ShutdownError });
    tt.throws(() => a.publish('echo', new Uint8Array(1)), { instanceOf: ShutdownError });
    await close();
  });
}

// The in-process bus has nothing in flight to flush: this is about the NATS client.
for (const kind of transportKinds().filter((k) => k.transport === 'nats')) {
  test(`${kind.name} - transport - a flush pending when its transport is closed (by another owner of it) fails with ShutdownError, never hangs`, async (t) => {
    const transport = await kind.create({ namespace: `f${process.pid}${kind.name}` });
    const pending = transport.flush();
    await transport.close();
    await t.throwsAsync(pending, { instanceOf: ShutdownError, message: /closed during a flush/ });
    await t.throwsAsync(transport.flush(), { instanceOf: ShutdownError });
  });
}
