import test from 'ava';
import { Frame, RpcTimeoutError } from '@tensorbus/core';
import { PendingRequests } from '../src/request/pending-requests.js';

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A table with one request on `s.one`, and what its end let go. */
function open(options: { timeoutMs?: number; signal?: AbortSignal } = {}) {
  const table = new PendingRequests('_INBOX.test');
  const ended: Array<Error | undefined> = [];
  const request = table.open({ subject: 'ns.s.one', label: 's.one', ...options });
  request.whenDone((error) => ended.push(error));
  return { table, request, ended };
}

test('pending request - a reply after its timeout is released, and the request settles once as a timeout', async (t) => {
  const { table, request, ended } = open({ timeoutMs: 20 });
  t.is(table.forReply(request.replySubject), request);
  const outcome = t.throwsAsync(request.promise, { instanceOf: RpcTimeoutError, message: /no reply on 's\.one' within 20 ms/ });
  await delay(60);
  const late = Frame.of(new Uint8Array([1]));
  request.resolve(late);
  await outcome;
  t.false(late.held, 'the late reply is let go');
  t.is(ended.length, 1, 'ended once');
  t.true(ended[0] instanceof RpcTimeoutError);
  t.is(table.size, 0, 'its entry is freed');
  t.is(table.forReply(request.replySubject), undefined);
});

test('pending request - an abort after its reply changes nothing: the caller keeps the reply', async (t) => {
  const controller = new AbortController();
  const { table, request, ended } = open({ signal: controller.signal, timeoutMs: 1_000 });
  const reply = Frame.of(new Uint8Array([7]));
  request.resolve(reply);
  controller.abort();
  const got = await request.promise;
  t.is(got, reply);
  t.true(got.held, 'the reply is the caller\'s, not released by the abort');
  t.deepEqual(ended, [undefined], 'ended once, answered');
  t.is(table.size, 0);
  // The timer is gone too: nothing settles it later.
  await delay(20);
  t.deepEqual(ended, [undefined]);
  got.release();
});

test('pending request - a timeout after an abort settles nothing: one AbortError, the entry freed', async (t) => {
  const controller = new AbortController();
  const { table, request, ended } = open({ signal: controller.signal, timeoutMs: 20 });
  const outcome = t.throwsAsync(request.promise, { name: 'AbortError' });
  controller.abort();
  await outcome;
  await delay(60);
  t.is(ended.length, 1, 'ended once');
  t.is((ended[0] as Error).name, 'AbortError');
  t.is(table.size, 0);
  const later = Frame.of(new Uint8Array([1]));
  request.resolve(later);
  t.false(later.held, 'a reply after the abort is let go');
  request.reject(new Error('late failure'));
  t.is(ended.length, 1, 'a later failure is ignored');
});

test('pending request - one aborted before it begins never enters the table', async (t) => {
  const { table, request, ended } = open({ signal: AbortSignal.abort() });
  await t.throwsAsync(request.promise, { name: 'AbortError' });
  t.is(table.size, 0);
  t.is(ended.length, 1, 'whatever it was handed is let go at once');
});

test('pending request - tokens are distinct and replies find their own request only', (t) => {
  const table = new PendingRequests('_INBOX.test');
  const a = table.open({ subject: 'x', label: 'x' });
  const b = table.open({ subject: 'x', label: 'x' });
  t.not(a.replySubject, b.replySubject);
  t.is(table.forReply(b.replySubject), b);
  t.is(table.forReply('_INBOX.other.1'), undefined);
  t.is(table.forReply('_INBOX.test'), undefined);
  t.is(table.size, 2);
  a.reject(new Error('x'));
  b.resolve(Frame.of(new Uint8Array(0)));
  a.promise.catch(() => undefined);
  t.is(table.size, 0);
});
