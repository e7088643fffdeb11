/**
 * `tensorbus gateway` as a user runs it: separate OS processes for the
 * nats-server, a worker and the gateway; Python's xmlrpc.client calls the
 * worker through it; Ctrl-C (SIGINT) stops it cleanly.
 */
import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { python } from './gateway-helpers.js';
import { TENSORBUS_CLI } from './helpers.js';

const cli = fileURLToPath(TENSORBUS_CLI);
const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
let groups = 0;

/** Starts `tensorbus gateway args…`; resolves with the process and the URL it printed. */
async function startCli(args: string[]): Promise<{ child: ChildProcess; url: string; stderr: () => string; stdout: () => string }> {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.TENSORBUS_QUIET;
  const child = spawn(process.execPath, [cli, 'gateway', ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^(https?:\/\/\S+)$/m.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once('exit', (code) => reject(new Error(`gateway exited with ${code}: ${err}`)));
  });
  return { child, url, stderr: () => err, stdout: () => out };
}

async function group(t: { teardown(fn: () => unknown): void }): Promise<{ url: string; namespace: string }> {
  const server = await sharedNatsServer();
  const namespace = `gwcli${process.pid}x${++groups}`;
  const worker = spawn(process.execPath, [workerScript], {
    env: { ...process.env, TENSORBUS_QUIET: '1', NATS_URL: server.url, TENSORBUS_NAMESPACE: namespace, TENSORBUS_NAME: 'w1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.teardown(() => worker.kill('SIGKILL'));
  await new Promise<void>((resolve) => worker.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve()));
  return { url: server.url, namespace };
}

test('cli - tensorbus gateway serves a worker of another process to python, logs each request, and stops on SIGINT', async (t) => {
  const { url, namespace } = await group(t);
  const gw = await startCli(['--namespace', namespace, '--port', '0', '--server', url]);
  t.teardown(() => gw.child.kill('SIGKILL'));
  t.deepEqual(await python(gw.url, 'tensor', 'w1'), { dtype: 'float32', shape: [3], values: [2, 4, 6] });
  t.regex(gw.stdout(), /no auth configured: listening on loopback only/);
  t.regex(gw.stderr(), /method="w1\.gw\.scale" worker="w1" ms=[\d.]+ outcome=ok/);
  gw.child.kill('SIGINT');
  const [code] = (await once(gw.child, 'exit')) as [number];
  t.is(code, 0);
});

test('cli - tensorbus gateway --auth takes basic users and identities from a JSON file (and --nats, the older name of --server)', async (t) => {
  const { url, namespace } = await group(t);
  const dir = mkdtempSync(join(tmpdir(), 'tb-gw-cli-'));
  writeFileSync(join(dir, 'auth.json'), JSON.stringify({ basic: { ops: { password: 'pw', identity: 'main' } }, identities: { main: {} } }));
  const gw = await startCli(['--namespace', namespace, '--port', '0', '--nats', url, '--auth', join(dir, 'auth.json')]);
  t.teardown(() => gw.child.kill('SIGKILL'));
  t.deepEqual(await python(gw.url, 'call', 'w1.gw.echo', ['1']), { http: 401 });
  t.regex(gw.stdout(), /clients must authenticate/);
  t.deepEqual(await python(gw.url.replace('http://', 'http://ops:pw@'), 'call', 'w1.gw.echo', ['1']), { ok: 1 });
});

test('cli - tensorbus gateway --auth with "jwt": null, or nothing configured, exits with an error instead of serving anyone on 0.0.0.0', async (t) => {
  const { url, namespace } = await group(t);
  const dir = mkdtempSync(join(tmpdir(), 'tb-gw-cli-'));
  for (const [file, content] of [['null-jwt.json', { jwt: null, identities: { main: {} } }], ['empty.json', { identities: { main: {} } }]] as const) {
    writeFileSync(join(dir, file), JSON.stringify(content));
    const error = await t.throwsAsync(startCli(['--namespace', namespace, '--port', '0', '--host', '0.0.0.0', '--nats', url, '--auth', join(dir, file)]));
    t.regex(error!.message, /exited with [1-9]\d*: .*(auth\.jwt must be an object|auth configures no basic user and no JWT)/s, file);
  }
});
