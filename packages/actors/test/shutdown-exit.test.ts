import test from 'ava';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';

const worker = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));

test('shutdown - a process exits promptly once its agent has shut down (no timer left behind)', async (t) => {
  const server = await sharedNatsServer();
  const env: NodeJS.ProcessEnv = { ...process.env, TENSORBUS_NAME: 'exit-w', TENSORBUS_QUIET: '1', NATS_URL: server.url, TENSORBUS_NAMESPACE: `exit${process.pid}` };
  delete env.TENSORBUS_WORLD_SIZE;
  delete env.TENSORBUS_RANK;
  const child = spawn(process.execPath, [worker, '--leave'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let left = 0;
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d;
    if (!left && stdout.includes('left exit-w')) left = Date.now();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const lingered = Date.now() - left;
  t.is(code, 0, stdout);
  t.true(left > 0, stdout);
  t.true(lingered < 2_000, `the process lived ${lingered} ms after shutdown`);
});
