import test from 'ava';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PermissionDeniedError } from '@tensorbus/core';
import { natsTransport, startNatsServer } from '../src/index.js';
import { connectRawNats, natsHeaders } from '../src/testing/index.js';

/** Two accounts: SVC exports the service `svc.echo`; APP imports it and nothing else. */
const accountsConfig = `accounts {
  SVC: {
    users: [ { user: svc, password: $TB_TEST_SVC_PASS } ]
    exports: [ { service: "svc.echo" } ]
  }
  APP: {
    users: [ { user: app, password: $TB_TEST_APP_PASS } ]
    imports: [ { service: { account: SVC, subject: "svc.echo" } } ]
  }
}
`;

function writeConfig(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'tb-conf-')), 'accounts.conf');
  writeFileSync(path, text);
  return path;
}

const env = { TB_TEST_SVC_PASS: 'svc-secret', TB_TEST_APP_PASS: 'app-secret' };

test('nats server - a config file reads its passwords from the env given; a wrong one is refused', async (t) => {
  const server = await startNatsServer({ configFile: writeConfig(accountsConfig), env });
  t.teardown(() => server.stop());
  t.false('TB_TEST_SVC_PASS' in process.env, 'the env is the server process’s, not ours');
  const app = await natsTransport({ servers: server.url, user: 'app', pass: 'app-secret', reconnect: false });
  await app.close();
  await t.throwsAsync(natsTransport({ servers: server.url, user: 'app', pass: 'svc-secret', reconnect: false }), { instanceOf: PermissionDeniedError });
});

test('nats server - a config file combined with maxPayload: both apply', async (t) => {
  const server = await startNatsServer({ configFile: writeConfig(accountsConfig), env, maxPayload: 200_000 });
  t.teardown(() => server.stop());
  const svc = await natsTransport({ servers: server.url, user: 'svc', pass: 'svc-secret', reconnect: false });
  t.is(svc.maxPayload, 200_000);
  await svc.close();
});

test('nats - a request crosses accounts through a service import, and its reply reaches the multiplexed inbox', async (t) => {
  const server = await startNatsServer({ configFile: writeConfig(accountsConfig), env });
  t.teardown(() => server.stop());
  const svc = await natsTransport({ servers: server.url, user: 'svc', pass: 'svc-secret' });
  const app = await natsTransport({ servers: server.url, user: 'app', pass: 'app-secret' });
  svc.subscribe('svc.echo', (m) => setTimeout(() => m.respond(m.data), 20 * m.data.bytes[0]!), { exclusive: true });
  svc.subscribe('svc.private', (m) => m.respond(m.data));
  await svc.flush();
  // Several requests in flight at once, answered out of order: each reply finds its own request.
  const replies = await Promise.all([3, 1, 2].map((k) => app.request('svc.echo', new Uint8Array([k]), { timeoutMs: 5_000 })));
  t.deepEqual(replies.map((r) => r.bytes[0]), [3, 1, 2]);
  // Across accounts no direct route is offered: every request keeps going through the import.
  await app.request('svc.echo', new Uint8Array([0]), { timeoutMs: 5_000 });
  t.is((app as unknown as { directStats: { calls: number } }).directStats.calls, 0);
  // What SVC does not export does not exist in APP's account: nobody answers there.
  await t.throwsAsync(app.request('svc.private', new Uint8Array([1]), { timeoutMs: 2_000 }), { code: 'WORKER_UNAVAILABLE' });
  await Promise.all([svc.close(), app.close()]);
});

test('nats - a request through a service import carries its account as origin; one from the own account carries none, whatever header it forges', async (t) => {
  const server = await startNatsServer({ configFile: writeConfig(accountsConfig), env });
  t.teardown(() => server.stop());
  const svc = await natsTransport({ servers: server.url, user: 'svc', pass: 'svc-secret' });
  const app = await natsTransport({ servers: server.url, user: 'app', pass: 'app-secret' });
  const origins: Array<string | undefined> = [];
  svc.subscribe('svc.echo', (m) => {
    origins.push(m.origin);
    m.respond(m.data);
  });
  await svc.flush();
  await app.request('svc.echo', new Uint8Array([1]), { timeoutMs: 5_000 });
  // A client of SVC itself writes the header nats-server sets on imported requests: it is not believed.
  const raw = await connectRawNats({ servers: server.url, user: 'svc', pass: 'svc-secret' });
  const forged = natsHeaders();
  forged.set('Nats-Request-Info', '{"acc":"APP"}');
  await raw.request('svc.echo', new Uint8Array([2]), { timeout: 5_000, headers: forged });
  t.deepEqual(origins, ['account:APP', undefined]);
  await raw.close();
  await Promise.all([svc.close(), app.close()]);
});
