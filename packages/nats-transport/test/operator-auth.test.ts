import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nkeys } from 'nats';
import { PermissionDeniedError } from '@tensorbus/core';
import { natsTransport, startNatsServer } from '../src/index.js';
import { natsJwt, operatorConfig, UNLIMITED_ACCOUNT, UNLIMITED_USER, userCreds, type KeyPair } from '../src/testing/index.js';

/**
 * Operator mode as a federation runs it: an operator signs a system account
 * and two tenants; SVC exports its worker's call subject as a service, APP
 * imports it; each user holds JWT credentials its account signed. All made
 * here, nothing from disk.
 */
function federation() {
  const operator = nkeys.createOperator();
  const system = nkeys.createAccount();
  const svc = nkeys.createAccount();
  const app = nkeys.createAccount();
  const svcUser = nkeys.createUser();
  const appUser = nkeys.createUser();
  const account = (key: KeyPair, name: string, more: Record<string, unknown> = {}) =>
    natsJwt(operator, key, name, { type: 'account', limits: UNLIMITED_ACCOUNT, default_permissions: { pub: {}, sub: {} }, ...more });
  const accounts = [
    account(system, 'SYS'),
    account(svc, 'SVC', { exports: [{ name: 'calls', subject: 'svc.call', type: 'service' }] }),
    account(app, 'APP', { imports: [{ name: 'calls', subject: 'svc.call', account: svc.getPublicKey(), type: 'service' }] }),
  ];
  const config = operatorConfig(natsJwt(operator, operator, 'tensorbus-op', { type: 'operator', system_account: system.getPublicKey() }), system.getPublicKey(), accounts);
  const svcCreds = userCreds(natsJwt(svc, svcUser, 'svc-worker', { type: 'user', pub: {}, sub: {}, ...UNLIMITED_USER }), svcUser);
  // APP's user may publish to the services of SVC's namespace only, and hear replies in its inboxes.
  const appCreds = userCreds(natsJwt(app, appUser, 'app-worker', { type: 'user', pub: { allow: ['svc.>'] }, sub: { allow: ['_INBOX.>'] }, ...UNLIMITED_USER }), appUser);
  // A user whose account the server was never given.
  const stranger = nkeys.createAccount();
  const strangerUser = nkeys.createUser();
  const strangerCreds = userCreds(natsJwt(stranger, strangerUser, 'stranger', { type: 'user', pub: {}, sub: {}, ...UNLIMITED_USER }), strangerUser);
  return { config, svcCreds, appCreds, strangerCreds };
}

test('nats - operator mode: a call crosses accounts through a JWT service import, a subject the user\'s JWT forbids is PERMISSION_DENIED, an unknown account is refused', async (t) => {
  const { config, svcCreds, appCreds, strangerCreds } = federation();
  const server = await startNatsServer({ config });
  t.teardown(() => server.stop());
  const credsFile = join(mkdtempSync(join(tmpdir(), 'tb-creds-')), 'svc.creds');
  writeFileSync(credsFile, svcCreds, { mode: 0o600 });
  const svc = await natsTransport({ servers: server.url, credsFile });
  const app = await natsTransport({ servers: server.url, creds: appCreds });
  t.teardown(() => Promise.all([svc.close(), app.close()]));
  svc.subscribe('svc.call', (m) => m.respond(Uint8Array.from(m.data.bytes, (b) => b + 1)), { exclusive: true });
  svc.subscribe('svc.private', (m) => m.respond(m.data));
  await svc.flush();

  const replies = await Promise.all([1, 2, 3].map((k) => app.request('svc.call', new Uint8Array([k]), { timeoutMs: 5_000 })));
  t.deepEqual(replies.map((r) => r.bytes[0]), [2, 3, 4], 'each reply crossed back to its request');
  // What SVC does not export does not exist in APP's account.
  await t.throwsAsync(app.request('svc.private', new Uint8Array([1]), { timeoutMs: 2_000 }), { code: 'WORKER_UNAVAILABLE' });
  // What APP's user may not subscribe to is refused by the server, and the subscription says so.
  const refused = await new Promise<Error>((resolve) => app.subscribe('svc.call', () => undefined, { onError: resolve }));
  t.true(refused instanceof PermissionDeniedError, `refused with ${String(refused)}`);
  t.is((refused as PermissionDeniedError).code, 'PERMISSION_DENIED');
  t.deepEqual((await app.request('svc.call', new Uint8Array([7]), { timeoutMs: 5_000 })).bytes[0], 8, 'the connection goes on');

  await t.throwsAsync(natsTransport({ servers: server.url, creds: strangerCreds, reconnect: false }), { instanceOf: PermissionDeniedError });
});
