/**
 * The launcher on its own: a server started by a process goes with it, and a
 * missing binary is named with the command that installs it.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { startNatsCluster, startNatsServer } from '../src/index.js';

test('nats-server - a started server answers on its loopback port with the NATS greeting, and stop() ends it', async (t) => {
  const server = await startNatsServer();
  const url = new URL(server.url);
  t.is(url.hostname, '127.0.0.1');
  const greeting = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(url.port), '127.0.0.1');
    socket.once('data', (d) => (socket.destroy(), resolve(d.toString())));
    socket.once('error', reject);
  });
  t.regex(greeting, /^INFO \{/);
  await server.stop();
  await t.throwsAsync(
    new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(undefined)));
      socket.once('error', reject);
    }),
  );
});

test('nats-server - a cluster of 3 gives 3 distinct client URLs', async (t) => {
  const cluster = await startNatsCluster({ size: 3 });
  t.teardown(() => cluster.stop());
  t.is(new Set(cluster.urls).size, 3);
});

/** Starts a process that starts a server and prints its pid; resolves with both. */
async function serverInChild(): Promise<{ child: ReturnType<typeof spawn>; serverPid: number }> {
  const module = new URL('../src/index.js', import.meta.url).href;
  const script = `const { startNatsServer } = await import(${JSON.stringify(module)}); const s = await startNatsServer(); console.log(s.pid); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const serverPid = Number(await new Promise<string>((resolve) => child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))));
  return { child, serverPid };
}

/** True while `pid` runs and is not a zombie (an orphan's exit is reaped by whoever is pid 1, if it reaps at all). */
function running(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 100 && running(pid); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  return !running(pid);
}

test('nats-server - an embedded server dies with the process that started it, even on SIGTERM', async (t) => {
  const { child, serverPid } = await serverInChild();
  t.true(serverPid > 0);
  t.is(readFileSync(`/proc/${serverPid}/comm`, 'utf8').trim(), 'nats-server', "the pid said is the server's own");
  child.kill('SIGTERM');
  const [, signal] = (await once(child, 'exit')) as [number | null, string | null];
  t.is(signal, 'SIGTERM', 'the process still dies of the signal');
  t.true(await gone(serverPid), 'the nats-server is gone');
});

test('nats-server - an embedded server dies with the process that started it when that one is killed with SIGKILL', async (t) => {
  // No exit hook runs on SIGKILL (kill -9 of the launcher): the server's parent-death signal ends it.
  const { child, serverPid } = await serverInChild();
  t.true(running(serverPid));
  child.kill('SIGKILL');
  await once(child, 'exit');
  t.true(await gone(serverPid), 'the nats-server is gone');
});

test('nats-server - startNatsServer names the install command when the binary is missing', async (t) => {
  const saved = process.env.NATS_SERVER_BIN;
  process.env.NATS_SERVER_BIN = '/nonexistent/nats-server';
  try {
    const error = await t.throwsAsync(startNatsServer());
    t.regex(error!.message, /apt-get install -y nats-server/);
  } finally {
    if (saved === undefined) delete process.env.NATS_SERVER_BIN;
    else process.env.NATS_SERVER_BIN = saved;
  }
});
