import test from 'ava';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const worker = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));

test('shutdown - a process exits promptly once its agent has shut down (no timer left behind)', async (t) => {
  const env: NodeJS.ProcessEnv = { ...process.env, TENSORBUS_NAME: 'exit-w', TENSORBUS_QUIET: '1' };
  delete env.NATS_URL;
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
