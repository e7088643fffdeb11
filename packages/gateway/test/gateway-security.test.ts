/**
 * The gateway's security: HTTP basic and bearer JWTs (a key, a JWKS URL),
 * each mapped to a NATS identity whose permissions decide what a client may
 * call; TLS; loopback only without auth; RRef handles bound to their client,
 * bounded, and released when the client goes idle.
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { InvalidArgumentError } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { startNatsServer } from '@tensorbus/nats-transport/testing';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import { FAULT_CODES, startGateway } from '../src/index.js';
import { NO_RREFS, rrefsReleased, transportKinds, eventually } from './helpers.js';
import { callBody, faultCodeOf, post, postFrom, python, workerAndGateway } from './gateway-helpers.js';

const basicAuth = { basic: { alice: { password: 'alice-pw', identity: 'team' }, bob: { password: 'bob-pw', identity: 'team' } } };
const withUser = (url: string, user: string, password: string) => url.replace('http://', `http://${user}:${password}@`).replace('https://', `https://${user}:${password}@`);
const basicHeader = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

for (const kind of transportKinds('without-tcp')) {
  test(`${kind.name} - gateway auth - python without credentials or with a wrong password is refused (HTTP 401); with the right ones it calls`, async (t) => {
    const { gateway, lines } = await workerAndGateway(t, kind, { auth: basicAuth, identities: { team: {} } });
    t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['1']), { http: 401 });
    t.deepEqual(await python(withUser(gateway.url, 'alice', 'wrong'), 'call', 'w1.gw.echo', ['1']), { http: 401 });
    t.deepEqual(await python(withUser(gateway.url, 'mallory', 'alice-pw'), 'call', 'w1.gw.echo', ['1']), { http: 401 });
    t.deepEqual(await python(withUser(gateway.url, 'alice', 'alice-pw'), 'call', 'w1.gw.echo', ['7']), { ok: 7 });
    t.true(lines.some((line) => line.includes('client="basic:alice"') && line.includes('outcome=ok')));
    t.is(lines.filter((line) => line.includes('refused 401')).length, 3);
  });

  test(`${kind.name} - gateway auth - a bearer JWT signed with the configured secret is accepted; a wrong, an expired and an identity-less token are refused`, async (t) => {
    const secret = 'a-long-shared-secret-for-hs256-tokens!';
    const { gateway } = await workerAndGateway(t, kind, { auth: { jwt: { secret, issuer: 'tests' } }, identities: { team: {} } });
    const key = new TextEncoder().encode(secret);
    const token = (claims: Record<string, unknown>, expires = '5m', signWith = key) =>
      new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuer('tests').setSubject('carol').setIssuedAt().setExpirationTime(expires).sign(signWith);
    const good = await token({ tensorbus_identity: 'team' });
    t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['3'], { XMLRPC_BEARER: good }), { ok: 3 });
    const forged = await token({ tensorbus_identity: 'team' }, '5m', new TextEncoder().encode('another-secret-another-secret-another'));
    t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['3'], { XMLRPC_BEARER: forged }), { http: 401 });
    t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['3'], { XMLRPC_BEARER: `${good.slice(0, -3)}abc` }), { http: 401 });
    t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['3'], { XMLRPC_BEARER: await token({ tensorbus_identity: 'team' }, '-1m') }), { http: 401 });
    t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['3'], { XMLRPC_BEARER: await token({ tensorbus_identity: 'root' }) }), { http: 401 });
    t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['3']), { http: 401 });
  });

  test(`${kind.name} - gateway auth - a JWT without exp, or signed with another algorithm than the configured one (HS512 for HS256), is refused`, async (t) => {
    const secret = 'a-long-shared-secret-for-hs256-tokens!-and-long-enough-for-hs512-too-0123456789';
    const key = new TextEncoder().encode(secret);
    const sign = (alg: string, expires: boolean) => {
      const jwt = new SignJWT({ tensorbus_identity: 'team' }).setProtectedHeader({ alg }).setSubject('carol');
      return (expires ? jwt.setExpirationTime('5m') : jwt).sign(key);
    };
    const { gateway } = await workerAndGateway(t, kind, { auth: { jwt: { secret } }, identities: { team: {} } });
    const call = async (token: string) => (await post(gateway.url, callBody('w1.gw.echo', '<value><int>5</int></value>'), { authorization: `Bearer ${token}` })).status;
    t.is(await call(await sign('HS256', true)), 200);
    t.is(await call(await sign('HS256', false)), 401, 'no exp: a token valid forever');
    t.is(await call(await sign('HS512', true)), 401, 'an algorithm the gateway did not configure');
    const pinned = await workerAndGateway(t, kind, { auth: { jwt: { secret, algorithms: ['HS512'] } }, identities: { team: {} } });
    t.is((await post(pinned.gateway.url, callBody('w1.gw.echo', '<value><int>5</int></value>'), { authorization: `Bearer ${await sign('HS512', true)}` })).status, 200);
    t.is((await post(pinned.gateway.url, callBody('w1.gw.echo', '<value><int>5</int></value>'), { authorization: `Bearer ${await sign('HS256', true)}` })).status, 401);
    await t.throwsAsync(startGateway({ port: 0, connect: () => kind.create(), auth: { jwt: { secret, algorithms: ['RS256'] } }, identities: { team: {} }, logger: null }), { instanceOf: InvalidArgumentError });
  });

  test(`${kind.name} - gateway handles - a token of another identity naming the same subject cannot use the handles of that subject`, async (t) => {
    const secret = 'a-long-shared-secret-for-hs256-tokens!';
    const key = new TextEncoder().encode(secret);
    const token = (identity: string) => new SignJWT({ tensorbus_identity: identity }).setProtectedHeader({ alg: 'HS256' }).setSubject('trainers').setExpirationTime('5m').sign(key);
    const { gateway, workers } = await workerAndGateway(t, kind, { auth: { jwt: { secret } }, identities: { trainers: {}, viewers: {} } });
    const trainers = { authorization: `Bearer ${await token('trainers')}` };
    const viewers = { authorization: `Bearer ${await token('viewers')}` };
    const made = await post(gateway.url, callBody('w1.gw.Counter', '<value><int>1</int></value>'), trainers);
    const handle = /<string>(rref-[^<]+)<\/string>/.exec(made.text)![1]!;
    const inc = callBody('rref.call', `<value>${handle}</value>`, '<value>inc</value>', '<value><array><data><value><int>1</int></value></data></array></value>');
    t.is(faultCodeOf((await post(gateway.url, inc, viewers)).text), FAULT_CODES.GATEWAY_UNKNOWN_HANDLE);
    t.regex((await post(gateway.url, inc, trainers)).text, /<int>2<\/int>/, 'the value was not touched through the viewers identity');
    t.is(gateway.handleCount('jwt:trainers/trainers'), 1);
    await post(gateway.url, callBody('rref.release', `<value>${handle}</value>`), trainers);
    await rrefsReleased(workers);
    t.pass();
  });

  test(`${kind.name} - gateway handles - the handles of one identity are bounded across its clients (each 127/8 address is one); other clients still call`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind, { limits: { maxHandlesPerClient: 3, maxHandlesPerIdentity: 7 } });
    const codes: Array<number | undefined> = [];
    for (let client = 2; client <= 5; client++) {
      for (let i = 0; i < 3; i++) codes.push(faultCodeOf((await postFrom(gateway.url, callBody('w1.gw.Counter', '<value><int>0</int></value>'), `127.0.0.${client}`)).text));
    }
    const limited = FAULT_CODES.GATEWAY_LIMIT_EXCEEDED;
    t.deepEqual(codes, [undefined, undefined, undefined, undefined, undefined, undefined, undefined, limited, limited, limited, limited, limited]);
    await eventually(() => workers[0]!.rrefStats().owners === 7);
    t.is(workers[0]!.rrefStats().owners, 7, 'the refused RRefs were released on their owner');
    t.regex((await postFrom(gateway.url, callBody('w1.gw.echo', '<value><int>9</int></value>'), '127.0.0.6')).text, /<int>9<\/int>/);
  });

  test(`${kind.name} - gateway auth - a bearer JWT is verified against a JWKS URL`, async (t) => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
    const jwks = createServer((_req, res) => res.end(JSON.stringify({ keys: [jwk] })));
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    t.teardown(() => jwks.close());
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`;
    const { gateway } = await workerAndGateway(t, kind, { auth: { jwt: { jwksUrl, audience: 'tensorbus' } }, identities: { team: {} } });
    const sign = (audience: string) =>
      new SignJWT({ tensorbus_identity: 'team' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setAudience(audience).setSubject('dave').setExpirationTime('5m').sign(privateKey);
    t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['"hi"'], { XMLRPC_BEARER: await sign('tensorbus') }), { ok: 'hi' });
    t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['"hi"'], { XMLRPC_BEARER: await sign('elsewhere') }), { http: 401 });
  });

  test(`${kind.name} - gateway handles - a handle is bound to the client that got it: another user naming it is told it does not exist`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind, { auth: basicAuth, identities: { team: {} } });
    const made = await post(gateway.url, callBody('w1.gw.Counter', '<value><int>1</int></value>'), basicHeader('alice', 'alice-pw'));
    const handle = /<string>(rref-[^<]+)<\/string>/.exec(made.text)![1]!;
    const stolen = await post(gateway.url, callBody('rref.call', `<value>${handle}</value>`, '<value>inc</value>', '<value><array><data><value><int>1</int></value></data></array></value>'), basicHeader('bob', 'bob-pw'));
    t.is(faultCodeOf(stolen.text), FAULT_CODES.GATEWAY_UNKNOWN_HANDLE);
    const own = await post(gateway.url, callBody('rref.call', `<value>${handle}</value>`, '<value>inc</value>', '<value><array><data><value><int>1</int></value></data></array></value>'), basicHeader('alice', 'alice-pw'));
    t.regex(own.text, /<int>2<\/int>/, 'the value was not touched by the other client');
    t.is(gateway.handleCount('basic:alice'), 1);
    await post(gateway.url, callBody('rref.release', `<value>${handle}</value>`), basicHeader('alice', 'alice-pw'));
    await rrefsReleased(workers);
    t.pass();
  });

  test.serial(`${kind.name} - gateway handles - a client that goes idle loses its handles after the idle timeout; the owner holds nothing after`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind, { handleIdleMs: 2_000 });
    for (let i = 0; i < 3; i++) await post(gateway.url, callBody('w1.gw.Counter', `<value><int>${i}</int></value>`));
    // Idle time counts from the end of the last request: all three are still held.
    t.is(gateway.handleCount('anonymous:127.0.0.1'), 3);
    await rrefsReleased(workers, 15_000);
    t.is(gateway.handleCount('anonymous:127.0.0.1'), 0);
    t.deepEqual(workers[0]!.rrefStats(), NO_RREFS);
  });

  test.serial(`${kind.name} - gateway handles - a call that lasts longer than the idle timeout does not cost its client its handles`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind, { handleIdleMs: 1_000 });
    await post(gateway.url, callBody('w1.gw.Counter', '<value><int>0</int></value>'));
    t.regex((await post(gateway.url, callBody('w1.gw.slow', '<value><int>3000</int></value>'))).text, /<int>3000<\/int>/);
    t.is(gateway.handleCount('anonymous:127.0.0.1'), 1, 'a client with a call in flight is not idle');
  });

  test.serial(`${kind.name} - gateway handles - a client that keeps making requests keeps its handles past the idle timeout`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind, { handleIdleMs: 1_000 });
    const made = await post(gateway.url, callBody('w1.gw.Counter', '<value><int>0</int></value>'));
    const handle = /<string>(rref-[^<]+)<\/string>/.exec(made.text)![1]!;
    for (let i = 0; i < 10; i++) {
      await new Promise((resolve) => setTimeout(resolve, 150));
      await post(gateway.url, callBody('w1.gw.echo', `<value><int>${i}</int></value>`));
    }
    t.is(gateway.handleCount('anonymous:127.0.0.1'), 1);
    t.regex((await post(gateway.url, callBody('rref.call', `<value>${handle}</value>`, '<value>inc</value>', '<value><array><data><value><int>4</int></value></data></array></value>'))).text, /<int>4<\/int>/);
    t.is(workers[0]!.rrefStats().owners, 1);
  });

  test(`${kind.name} - gateway handles - past its handle bound a client gets GATEWAY_LIMIT_EXCEEDED and the worker keeps no extra value`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind, { limits: { maxHandlesPerClient: 2 } });
    const codes: Array<number | undefined> = [];
    for (let i = 0; i < 4; i++) codes.push(faultCodeOf((await post(gateway.url, callBody('w1.gw.Counter', '<value><int>0</int></value>'))).text));
    t.deepEqual(codes, [undefined, undefined, FAULT_CODES.GATEWAY_LIMIT_EXCEEDED, FAULT_CODES.GATEWAY_LIMIT_EXCEEDED]);
    await eventually(() => workers[0]!.rrefStats().owners === 2);
    t.is(workers[0]!.rrefStats().owners, 2);
  });
}

test('gateway auth - auth given that configures nothing ("jwt": null, no users) is refused at start', async (t) => {
  const connect = () => transportKinds()[0]!.create();
  for (const auth of [{ jwt: null }, {}, { basic: {} }, { basic: null, jwt: null }]) {
    await t.throwsAsync(startGateway({ port: 0, host: '127.0.0.1', connect, auth: auth as never, identities: { team: {} }, logger: null }), { instanceOf: InvalidArgumentError, message: /auth/ }, JSON.stringify(auth));
  }
});

test('gateway auth - without auth a non-loopback address is refused at start, and the start line says loopback only', async (t) => {
  await t.throwsAsync(startGateway({ host: '0.0.0.0', port: 0, connect: () => transportKinds()[0]!.create() }), { instanceOf: InvalidArgumentError, message: /loopback/ });
  const lines: string[] = [];
  const gateway = await startGateway({ port: 0, connect: () => transportKinds()[0]!.create(), logger: { info: (line) => lines.push(line) } });
  t.teardown(() => gateway.close());
  t.regex(lines[0]!, /no auth configured: listening on loopback only/);
  t.regex(gateway.url, /^http:\/\/127\.0\.0\.1:\d+\/RPC2$/);
});

test('gateway tls - python calls over https, trusting the CA that signed the gateway certificate', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tb-gw-tls-'));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=test-ca', '-keyout', 'ca.key', '-out', 'ca.crt');
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=gateway', '-keyout', 'gw.key', '-out', 'gw.csr');
  ssl('x509', '-req', '-in', 'gw.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', 'san.ext', '-out', 'gw.crt');
  const { gateway } = await workerAndGateway(t, transportKinds()[0]!, { tls: { cert: readFileSync(join(dir, 'gw.crt')), key: readFileSync(join(dir, 'gw.key')) } });
  t.regex(gateway.url, /^https:/);
  t.deepEqual(await python(gateway.url, 'call', 'w1.gw.echo', ['5'], { XMLRPC_CAFILE: join(dir, 'ca.crt') }), { ok: 5 });
  // Without the CA the client refuses the certificate: nothing went in clear.
  await t.throwsAsync(python(gateway.url, 'call', 'w1.gw.echo', ['5']));
});

test('nats - gateway identities - each user calls through its own NATS identity: a subject it may not publish is a PERMISSION_DENIED fault', async (t) => {
  const ns = `gwperm${process.pid}`;
  const server = await startNatsServer({
    config: `authorization {
      users = [
        { user: full, password: full-pw },
        { user: limited, password: limited-pw, permissions: { publish: { deny: ["${ns}.tb.call.w2"] } } }
      ]
    }`,
  });
  t.teardown(() => server.stop());
  const workers: RpcAgent[] = await Promise.all(
    ['w1', 'w2'].map((name) => initRpc({ name, transport: natsTransport({ servers: server.url, namespace: ns, user: 'full', pass: 'full-pw' }), logger: null })),
  );
  t.teardown(() => Promise.all(workers.map((w) => w.shutdown({ graceful: false }))));
  const gateway = await startGateway({
    port: 0,
    namespace: ns,
    nats: server.url,
    auth: { basic: { alice: { password: 'a', identity: 'full' }, bob: { password: 'b', identity: 'limited' } } },
    identities: { full: { user: 'full', pass: 'full-pw' }, limited: { user: 'limited', pass: 'limited-pw' } },
    retry: { attempts: 1, delayMs: 0 },
    logger: null,
  });
  t.teardown(() => gateway.close());
  t.deepEqual(gateway.agentNames().sort(), [`${gateway.name}-full`, `${gateway.name}-limited`]);
  t.deepEqual(await python(withUser(gateway.url, 'alice', 'a'), 'call', 'w2.gw.echo', ['1']), { ok: 1 });
  const denied = (await python(withUser(gateway.url, 'bob', 'b'), 'call', 'w2.gw.echo', ['1'])) as { fault: number; string: string };
  t.is(denied.fault, FAULT_CODES.PERMISSION_DENIED);
  t.regex(denied.string, /w2/);
  t.deepEqual(await python(withUser(gateway.url, 'bob', 'b'), 'call', 'w1.gw.echo', ['2']), { ok: 2 }, 'what the identity may publish still works');
});
