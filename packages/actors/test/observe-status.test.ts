/**
 * `tensorbus status` against real worker processes on a real nats-server:
 * the workers table (host, backend, transport, calls, RRefs, tensors), the
 * functions each one serves and calls, and errors by code.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { RemoteError } from '@tensorbus/core';
import { echo, fail } from './fixtures/functions.js';
import { stop } from './fixtures/worker-functions.js';
import { startProcessGroup, stopProcessGroups } from './process-group.js';
import { parseArgs } from '../src/cli/args.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
const cli = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

function runCli(args: string[], env: Record<string, string> = {}, onErr?: (text: string) => void): Promise<{ code: number; out: string; err: string }> {
  const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, TENSORBUS_QUIET: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => {
    err += d;
    onErr?.(err);
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code: code ?? 1, out, err })));
}

test.serial('status - prints every worker with its host, backend and transport, the functions it serves and calls, and errors by code', async (t) => {
  const { agent, children, serverUrl, namespace } = await startProcessGroup(workerScript, 3);
  const args = ['status', '--server', serverUrl, '--namespace', namespace];
  // The first query turns measuring on in every worker.
  const first = await runCli(args);
  t.is(first.code, 0, first.err);
  for (let i = 0; i < 20; i++) await agent.rpcSync('p1', echo, [i]);
  await t.throwsAsync(agent.rpcSync('p2', fail, ['for status']), { instanceOf: RemoteError });
  const { code, out, err } = await runCli(args);
  t.is(code, 0, err);
  t.regex(out, /3 worker\(s\) in namespace/);
  t.regex(out, /id\s+name\s+host\s+pid\s+uptime\s+backend\s+transport\s+calls\/s/);
  for (const name of ['p0', 'p1', 'p2']) t.regex(out, new RegExp(`^\\s*\\d+\\s+${name}\\s+\\S+\\s+\\d+\\s+\\S+\\s+(wasm|tensorflow|cpu)\\s+nats\\s`, 'm'), `${name}'s row`);
  t.regex(out, /^p1\s+served\s+test\.echo\s+\S+\s+\S+\s+0\s+20$/m, 'p1 served 20 echoes');
  t.regex(out, /^p0\s+made\s+test\.echo\s+\S+\s+\S+\s+0\s+20$/m, 'p0 made them');
  t.regex(out, /^p2\s+REMOTE_ERROR\s+1$/m, 'the failure, by code');
  await Promise.all([agent.rpcSync('p1', stop, []), agent.rpcSync('p2', stop, [])]);
  await agent.shutdown({ timeoutMs: 10_000 });
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
});

test.serial('launcher - --dashboard serves the launched workers\' dashboard, prints its address, and keeps it up for --linger', async (t) => {
  let url: string | undefined;
  const seen: string[][] = [];
  let reading: Promise<void> | undefined;
  const run = runCli(['launch', '-n', '2', '--dashboard', '0', '--linger', '2', workerScript, '--exit-after', '10000', '0'], { NATS_URL: '' }, (err) => {
    const match = /dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(err);
    if (match && url === undefined) {
      url = match[1];
      reading = (async () => {
        // The page reads /state.json and /events; the state names the launched workers while they run.
        // Each worker's 10 s start from its process's start, before TensorFlow.js loads: both are up for a while even on a loaded machine.
        for (let i = 0; i < 50; i++) {
          const state = (await (await fetch(`${url}state.json`)).json()) as { workers: Array<{ name: string; state: string }> };
          seen.push(state.workers.filter((w) => w.state === 'up').map((w) => w.name));
          if (seen.at(-1)!.length === 2) return;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
      })();
    }
  });
  const { code, err } = await run;
  await reading;
  t.is(code, 0, err);
  t.truthy(url, 'the address is printed');
  t.deepEqual(seen.at(-1), ['worker0', 'worker1']);
  t.regex(err, /the workers finished; the dashboard stays at http:\/\/127\.0\.0\.1:\d+\/ for 2 s/);
  await t.throwsAsync(fetch(url!), undefined, 'the dashboard is gone once the launcher exits');
});

test('cli - dashboard defaults to 127.0.0.1:8265 and the environment; launch takes --dashboard and --linger; bad values are refused', (t) => {
  const saved = { url: process.env.NATS_URL, ns: process.env.TENSORBUS_NAMESPACE };
  process.env.NATS_URL = 'nats://127.0.0.1:4222';
  process.env.TENSORBUS_NAMESPACE = 'envns';
  try {
    t.deepEqual(parseArgs(['dashboard']), { command: 'dashboard', server: 'nats://127.0.0.1:4222', namespace: 'envns', port: 8265, host: '127.0.0.1' });
    t.deepEqual(parseArgs(['dashboard', '--server', 'nats://h:1', '--namespace', 'ns', '--port', '0', '--host', '0.0.0.0']), { command: 'dashboard', server: 'nats://h:1', namespace: 'ns', port: 0, host: '0.0.0.0' });
    const launch = parseArgs(['launch', '-n', '2', '--dashboard', '9000', '--linger', '1.5', 'x.js', '--epochs', '3']);
    t.like(launch, { command: 'launch', dashboardPort: 9000, lingerMs: 1500, script: 'x.js', scriptArgs: ['--epochs', '3'] });
    t.like(parseArgs(['launch', 'x.js']), { dashboardPort: undefined, lingerMs: 0 });
    for (const bad of [['dashboard', '--port', '70000'], ['dashboard', '--port', 'x'], ['dashboard', '--bogus'], ['launch', '--dashboard', '-1', 'x.js'], ['launch', '--linger', 'soon', 'x.js']]) {
      t.throws(() => parseArgs(bad), undefined, bad.join(' '));
    }
  } finally {
    if (saved.url === undefined) delete process.env.NATS_URL;
    else process.env.NATS_URL = saved.url;
    if (saved.ns === undefined) delete process.env.TENSORBUS_NAMESPACE;
    else process.env.TENSORBUS_NAMESPACE = saved.ns;
  }
});
