import test from 'ava';
import { RequestFailure, RpcTimeoutError, ShutdownError, WorkerUnavailableError, type Transport } from '@tensorbus/core';
import { transportKinds, type TransportKind } from '../src/testing/index.js';

/** Two transports on one fresh namespace, and an echo responder on `echo`. */
async function pair(kind: TransportKind, options = {}): Promise<{ a: Transport; b: Transport; close(): Promise<void> }> {
  const namespace = `c${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const a = await kind.create({ namespace, ...options });
  const b = await kind.create({ namespace, ...options });
  b.subscribe('echo', (m) => m.respond(m.data));
  b.subscribe('slow', (m) => setTimeout(() => m.respond(m.data), 300).unref());
  b.subscribe('silent', () => undefined);
  await b.flush();
  return { a, b, close: async () => void (await Promise.all([a.close(), b.close()])) };
}

function pattern(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i += 4096) bytes[i] = (i / 4096) % 251;
  if (size > 0) bytes[size - 1] = 7;
  return bytes;
}

function samePattern(t: { is(a: unknown, b: unknown, m?: string): void }, got: Uint8Array, size: number): void {
  t.is(got.byteLength, size, 'length');
  for (const i of [0, 4096, Math.floor(size / 2 / 4096) * 4096, size - 1]) if (i >= 0 && i < size) t.is(got[i], i === size - 1 ? 7 : (i / 4096) % 251, `byte ${i}`);
}

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - transport - ${title}`;

  test(t('request/reply, publish/subscribe, wildcards and queue groups'), async (tt) => {
    const { a, b, close } = await pair(kind);
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
    const { a, close } = await pair(kind);
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
    const { a, b, close } = await pair(kind);
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
    const { a, b, close } = await pair(kind);
    let received = 0;
    // Exclusive, as a worker's call subject: on NATS the first reply teaches the direct route.
    b.subscribe('once', (m) => {
      if (++received === 1) m.respond(m.data);
    }, { exclusive: true });
    await b.flush();
    const nobody = await tt.throwsAsync(a.request('nobody.here', new Uint8Array(1), { timeoutMs: 5_000 }), { instanceOf: WorkerUnavailableError });
    tt.is(nobody!.reason, RequestFailure.NoResponders);
    tt.is((await a.request('once', new Uint8Array([5]), { timeoutMs: 5_000 })).bytes[0], 5);
    const pending = a.request('once', new Uint8Array([6]), { timeoutMs: 0 });
    const deadline = Date.now() + 5_000;
    while (received < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    tt.is(received, 2, 'the second request reached its responder');
    // The responder's end goes away without answering, as when its process dies.
    await b.close();
    const lost = await tt.throwsAsync(pending, { instanceOf: WorkerUnavailableError });
    tt.is(lost!.reason, RequestFailure.ResponderLost);
    await close();
  });

  test(t('closing a transport with a request pending that it serves itself rejects it with ShutdownError, not as a lost responder'), async (tt) => {
    const { a, close } = await pair(kind);
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
    const { a, close } = await pair(kind);
    const replies = await Promise.all(Array.from({ length: 1_000 }, (_, i) => a.request('echo', new Uint8Array([i & 255, i >> 8]), { timeoutMs: 20_000 })));
    tt.true(replies.every((r, i) => r.bytes[0] === (i & 255) && r.bytes[1] === i >> 8));
    await close();
  });

  test(t('payloads of 0 bytes, 1 KB, 1 MB + 1 and 40 MB round-trip'), async (tt) => {
    const { a, close } = await pair(kind);
    for (const size of [0, 1_024, 1_048_577, 40_000_000]) {
      samePattern(tt, (await a.request('echo', pattern(size), { timeoutMs: 60_000 })).bytes, size);
    }
    await close();
  });

  test.serial(t('a 400 MB payload round-trips'), async (tt) => {
    const { a, close } = await pair(kind);
    const size = 400_000_000;
    samePattern(tt, (await a.request('echo', pattern(size), { timeoutMs: 120_000 })).bytes, size);
    await close();
  });

  test(t('closing rejects pending requests with ShutdownError; a closed transport refuses work'), async (tt) => {
    const { a, close } = await pair(kind);
    const pending = a.request('silent', new Uint8Array(1));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await a.close();
    await tt.throwsAsync(pending, { instanceOf: ShutdownError });
    await tt.throwsAsync(a.request('echo', new Uint8Array(1)), { instanceOf: ShutdownError });
    tt.throws(() => a.publish('echo', new Uint8Array(1)), { instanceOf: ShutdownError });
    await close();
  });
}

test('nats - transport - a flush pending when its transport is closed (by another owner of it) fails with ShutdownError, never hangs', async (t) => {
  const nats = transportKinds().find((k) => k.name === 'nats')!;
  const transport = await nats.create({ namespace: `f${process.pid}` });
  const pending = transport.flush();
  await transport.close();
  await t.throwsAsync(pending, { instanceOf: ShutdownError, message: /closed during a flush/ });
  await t.throwsAsync(transport.flush(), { instanceOf: ShutdownError });
});
