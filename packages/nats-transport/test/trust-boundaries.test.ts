/**
 * The NATS transport at the trust boundary: subjects that would be read as
 * more than one protocol line are refused before the client writes them,
 * permission violations reject at once, and a refused TLS certificate says so.
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, headers as natsHeaders } from 'nats';
import { InvalidArgumentError, PermissionDeniedError, TransportError } from '@tensorbus/core';
import { natsTransport, startNatsServer } from '../src/index.js';
import { sharedNatsServer } from '../src/testing/index.js';

test('nats - subjects and reply subjects with spaces, control characters, empty tokens or beyond the length limit are refused before they reach the server', async (t) => {
  const server = await sharedNatsServer();
  const ns = `subj${process.pid}`;
  const transport = await natsTransport({ servers: server.url, namespace: ns });
  t.teardown(() => transport.close());
  // A raw observer of everything in the namespace: nothing of the refused ones may arrive.
  const observer = await connect({ servers: server.url });
  t.teardown(() => observer.close());
  const seen: string[] = [];
  observer.subscribe(`${ns}.>`, { callback: (_, m) => seen.push(m.subject) });
  observer.subscribe('injected.>', { callback: (_, m) => seen.push(m.subject) });
  await observer.flush();
  const bad = ['a 0\r\n\r\nPUB injected.x 1', 'a\nb', 'a\tb', 'a..b', '.a', 'a.', 'a.*', 'a.>', `a.${'x'.repeat(1_100)}`, 'é'];
  for (const subject of bad) {
    t.throws(() => transport.publish(subject, new Uint8Array(1)), { instanceOf: InvalidArgumentError }, JSON.stringify(subject));
    await t.throwsAsync(transport.request(subject, new Uint8Array(1), { timeoutMs: 1_000 }), { instanceOf: InvalidArgumentError });
  }
  for (const subject of ['a b', 'a\r\nUNSUB 1', 'a..b', 'a.>.b']) {
    t.throws(() => transport.subscribe(subject, () => undefined), { instanceOf: InvalidArgumentError });
  }
  t.notThrows(() => transport.subscribe('ok.*', () => undefined), 'wildcards are fine in subscriptions');
  // The connection is untouched: a plain request still works.
  transport.subscribe('echo', (m) => m.respond(m.data));
  await transport.flush();
  t.is((await transport.request('echo', new Uint8Array([7]), { timeoutMs: 2_000 })).bytes[0], 7);
  await observer.flush();
  t.deepEqual(seen.filter((s) => s !== `${ns}.echo` && !s.startsWith('_INBOX')), []);
  await t.throwsAsync(natsTransport({ servers: server.url, namespace: 'bad ns' }), { instanceOf: InvalidArgumentError });
});

const permissionsConfig = `authorization {
  users = [
    { user: limited, password: limited-pass, permissions: { publish: { allow: ["open.>", "_INBOX.>"] }, subscribe: { allow: ["open.>", "_INBOX.>"] } } }
    { user: full, password: full-pass }
  ]
}`;

test('nats - a request to a subject this identity may not publish to rejects at once with PermissionDeniedError, not after its timeout', async (t) => {
  const server = await startNatsServer({ config: permissionsConfig });
  t.teardown(() => server.stop());
  const full = await natsTransport({ servers: server.url, user: 'full', pass: 'full-pass' });
  const limited = await natsTransport({ servers: server.url, user: 'limited', pass: 'limited-pass' });
  t.teardown(() => Promise.all([full.close(), limited.close()]));
  full.subscribe('forbidden.call', (m) => m.respond(m.data));
  full.subscribe('open.call', (m) => m.respond(m.data));
  await full.flush();
  const started = Date.now();
  const error = await t.throwsAsync(limited.request('forbidden.call', new Uint8Array([1]), { timeoutMs: 10_000 }), { instanceOf: PermissionDeniedError });
  t.true(Date.now() - started < 2_000, `rejected after ${Date.now() - started} ms`);
  t.regex(error!.message, /forbidden\.call/);
  t.is((await limited.request('open.call', new Uint8Array([2]), { timeoutMs: 2_000 })).bytes[0], 2, 'allowed subjects still work');
});

/** A throwaway CA, a server certificate for 127.0.0.1 it signs, a client certificate it signs, and one another CA signs. */
function makeCertificates(): string {
  const dir = mkdtempSync(join(tmpdir(), 'tb-tls-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  for (const ca of ['ca', 'other-ca']) ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${ca}`, '-keyout', `${ca}.key`, '-out', `${ca}.crt`);
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  for (const [name, ca, ext] of [['server', 'ca', true], ['client', 'ca', false], ['stranger', 'other-ca', false]] as const) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`);
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '1', ...(ext ? ['-extfile', 'san.ext'] : []), '-out', `${name}.crt`);
  }
  return dir;
}

test('nats - a TLS client certificate the server refuses fails at once with PermissionDeniedError saying so; one it trusts connects', async (t) => {
  const dir = makeCertificates();
  const server = await startNatsServer({ config: `tls { cert_file: "${dir}/server.crt", key_file: "${dir}/server.key", ca_file: "${dir}/ca.crt", verify: true }` });
  t.teardown(() => server.stop());
  const tls = (who: string) => ({ caFile: `${dir}/ca.crt`, certFile: `${dir}/${who}.crt`, keyFile: `${dir}/${who}.key` });
  const good = await natsTransport({ servers: server.url, tls: tls('client'), direct: false });
  await good.close();
  for (const options of [{ tls: tls('stranger') }, { tls: { caFile: `${dir}/ca.crt` } }]) {
    const started = Date.now();
    const error = await t.throwsAsync(natsTransport({ servers: server.url, direct: false, ...options }), { instanceOf: PermissionDeniedError });
    t.regex(error!.message, /TLS.*refused this client's TLS certificate/);
    t.true(Date.now() - started < 4_000, `failed after ${Date.now() - started} ms`);
  }
  // A client that cannot verify the server says that instead.
  const error = await t.throwsAsync(natsTransport({ servers: server.url, direct: false, tls: { ...tls('client'), caFile: `${dir}/other-ca.crt` } }), { instanceOf: TransportError });
  t.regex(error!.message, /verify the server's TLS certificate/);
});

test('nats - a puller of a chunked transfer gets chunks only on an inbox: it cannot make the sender publish the payload on a subject of its choosing', async (t) => {
  const server = await startNatsServer({ maxPayload: 64 * 1024 });
  t.teardown(() => server.stop());
  const ns = `pull${process.pid}`;
  const sender = await natsTransport({ servers: server.url, namespace: ns, direct: false });
  t.teardown(() => sender.close());
  const raw = await connect({ servers: server.url });
  t.teardown(() => raw.close());
  const onVictim: number[] = [];
  raw.subscribe(`${ns}.tb.call.victim`, { callback: (_, m) => onVictim.push(m.data.byteLength) });
  const onInbox: number[] = [];
  raw.subscribe('_INBOX.puller', { callback: (_, m) => onInbox.push(m.data.byteLength) });
  const announced = new Promise<string>((resolve) => {
    raw.subscribe(`${ns}.big`, { callback: (_, m) => resolve(m.headers?.get('tb-pull') ?? '') });
  });
  await raw.flush();
  sender.publish('big', new Uint8Array(200 * 1024).fill(7));
  const pullSubject = await announced;
  t.regex(pullSubject, /^_INBOX\./);
  raw.publish(pullSubject, new TextEncoder().encode(JSON.stringify({ s: `${ns}.tb.call.victim`, c: 8 })));
  raw.publish(pullSubject, new TextEncoder().encode(JSON.stringify({ s: '_INBOX.puller', c: 8 })));
  await raw.flush();
  const deadline = Date.now() + 5_000;
  while (onInbox.length < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  t.true(onInbox.length >= 4, `the inbox puller got ${onInbox.length} chunks`);
  t.deepEqual(onVictim, [], 'nothing was published on the subject the puller named');
});

test('nats - a puller naming a chunk subject that is not a plain subject is ignored: the transfer goes on for honest pullers', async (t) => {
  const server = await startNatsServer({ maxPayload: 64 * 1024 });
  t.teardown(() => server.stop());
  const ns = `badpull${process.pid}`;
  const sender = await natsTransport({ servers: server.url, namespace: ns, direct: false });
  t.teardown(() => sender.close());
  const raw = await connect({ servers: server.url });
  t.teardown(() => raw.close());
  let received = 0;
  raw.subscribe('_INBOX.honest', { callback: (_, m) => (received += m.data.byteLength) });
  const announced = new Promise<string>((resolve) => {
    raw.subscribe(`${ns}.big`, { callback: (_, m) => resolve(m.headers?.get('tb-pull') ?? '') });
  });
  await raw.flush();
  const size = 600 * 1024;
  sender.publish('big', new Uint8Array(size).fill(3));
  const pullSubject = await announced;
  const pull = (message: object) => raw.publish(pullSubject, new TextEncoder().encode(JSON.stringify(message)));
  // One chunk of credit, so the transfer is surely under way when the hostile pull comes.
  pull({ s: '_INBOX.honest', c: 1 });
  await raw.flush();
  // Under the sender's inboxes, but with a space and a line break: written as it is, it would be protocol lines.
  pull({ s: '_INBOX.x y\r\nPUB evil 1\r\n', c: 8 });
  await raw.flush();
  await new Promise((resolve) => setTimeout(resolve, 100));
  pull({ s: '_INBOX.honest', c: 1_024 });
  const deadline = Date.now() + 5_000;
  while (received < size && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  t.is(received, size, 'the honest puller got the whole payload');
});

test('nats - an announcement whose pull subject is not a plain subject fails that delivery at once, before anything is fetched', async (t) => {
  const server = await sharedNatsServer();
  const ns = `badann${process.pid}`;
  const receiver = await natsTransport({ servers: server.url, namespace: ns });
  t.teardown(() => receiver.close());
  const errors: Error[] = [];
  let delivered = 0;
  receiver.subscribe('big', () => delivered++, { onError: (error) => errors.push(error) });
  await receiver.flush();
  const raw = await connect({ servers: server.url });
  t.teardown(() => raw.close());
  const h = natsHeaders();
  h.set('tb-xfer', 'x.1');
  h.set('tb-size', '1000');
  h.set('tb-chunk', '500');
  h.set('tb-pull', '_INBOX.a b');
  const started = Date.now();
  raw.publish(`${ns}.big`, new Uint8Array(0), { headers: h });
  await raw.flush();
  const deadline = Date.now() + 5_000;
  while (errors.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  t.is(errors.length, 1);
  t.true(errors[0] instanceof TransportError);
  t.regex(errors[0]!.message, /malformed chunked-transfer announcement/);
  t.true(Date.now() - started < 2_000, `failed after ${Date.now() - started} ms, not at the chunk timeout`);
  t.is(delivered, 0);
});
