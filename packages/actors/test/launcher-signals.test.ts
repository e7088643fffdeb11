/**
 * The launcher with a real process group and real signals, as a terminal
 * sends them: Ctrl-C is SIGINT to the launcher's whole foreground group.
 * Also: errors a worker's own code throws are reported as Node reports them,
 * and a worker started without what it needs says what is missing.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { allGone, cleanEnv, launch, pidsOf } from './launcher-helpers.js';

const worker = fileURLToPath(new URL('./fixtures/signal-worker.js', import.meta.url));

test.serial('launcher - Ctrl-C: workers shut down gracefully while the embedded nats-server stays up, then nothing is left and the exit code is 130', async (t) => {
  const launched = launch(['-n', '3', '--names', 'w0,w1,w2', worker, 'graceful']);
  try {
    await launched.printed(/ready w\d/, 3);
    const pids = pidsOf(launched);
    t.is(pids.length, 4, 'three workers and the nats-server');
    const started = Date.now();
    process.kill(-launched.launcher.pid!, 'SIGINT'); // the whole foreground group, as a terminal does
    t.is(await launched.exit, 130);
    t.true(Date.now() - started < 20_000, `stopped in ${Date.now() - started} ms`);
    for (const name of ['w0', 'w1', 'w2']) t.regex(launched.out(), new RegExp(`left ${name}`), `${name} finished its graceful shutdown; its stderr:\n${launched.err()}`);
    t.notRegex(launched.out(), /shutdown failed/);
    t.deepEqual(await allGone(pids), [], 'no worker and no nats-server left running');
  } finally {
    if (launched.launcher.exitCode === null) process.kill(-launched.launcher.pid!, 'SIGKILL');
  }
});

test.serial('launcher - a second Ctrl-C kills workers that do not stop; nothing is left and the exit code is 130', async (t) => {
  const launched = launch(['-n', '2', '--names', 'w0,w1', worker, 'stubborn']);
  try {
    await launched.printed(/ready w\d/, 2);
    const pids = pidsOf(launched);
    process.kill(-launched.launcher.pid!, 'SIGINT');
    await launched.printed(/ignoring SIGINT in w\d/, 2);
    t.is(launched.launcher.exitCode, null, 'the launcher waits for its workers');
    const started = Date.now();
    process.kill(-launched.launcher.pid!, 'SIGINT');
    t.is(await launched.exit, 130);
    // Without the kill the launcher would wait out the 30 s grace; half of it leaves room for a loaded machine.
    t.true(Date.now() - started < 15_000, `killed in ${Date.now() - started} ms`);
    t.deepEqual(await allGone(pids), [], 'no worker and no nats-server left running');
  } finally {
    if (launched.launcher.exitCode === null) process.kill(-launched.launcher.pid!, 'SIGKILL');
  }
});

test.serial("launcher - a worker's uncaught error shows the user's stack, exits with code 1, and the launcher exits with it", async (t) => {
  const launched = launch(['-n', '2', '--names', 'w0,w1', '--grace', '5', worker, 'throw']);
  try {
    t.is(await launched.exit, 1);
    t.regex(launched.err(), /\[w1\] Error: user failure in w1/);
    t.regex(launched.err(), /\[w1\] +at .*signal-worker\.js/);
    t.notRegex(launched.err(), /tf-backend-wasm/);
    t.regex(launched.err(), /w1 exited with code 1: stopping the other workers/);
    t.deepEqual(await allGone(pidsOf(launched)), []);
  } finally {
    if (launched.launcher.exitCode === null) process.kill(-launched.launcher.pid!, 'SIGKILL');
  }
});

async function runAlone(env: Record<string, string>): Promise<{ code: number | null; err: string }> {
  const child = spawn(process.execPath, [worker], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const [code] = await once(child, 'exit');
  return { code: code as number | null, err };
}

test('launcher - a worker started without a name says how to start it', async (t) => {
  const { code, err } = await runAlone({});
  t.is(code, 1);
  t.regex(err, /InvalidArgumentError: this worker has no name: pass initRpc\(\{ name \}\) or set TENSORBUS_NAME; `tensorbus launch -n N script.js`/);
});

test('launcher - a worker named by TENSORBUS_NAME without NATS_URL says what is missing instead of running alone', async (t) => {
  const { code, err } = await runAlone({ TENSORBUS_NAME: 'ps' });
  t.is(code, 1);
  t.regex(err, /TENSORBUS_NAME=ps is set but NATS_URL is not/);
  t.regex(err, /tensorbus launch/);
});
