/**
 * The XML-RPC gateway example as a user runs it (`npm run gateway-demo`):
 * a stdlib-only Python orchestrator trains a model held by tensorbus worker
 * processes through the gateway. The numbers it prints must show training.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const main = fileURLToPath(new URL('../src/gateway/main.js', import.meta.url));

test('gateway example - the python orchestrator trains through the gateway: loss falls 100-fold and w reaches [3, -2]', async (t) => {
  const child = spawn(process.execPath, [main, '--epochs', '30'], { env: { ...process.env, NATS_URL: '', TENSORBUS_QUIET: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.is(code, 0, stdout);
  const epochs = [...stdout.matchAll(/\[python\s*\] epoch (\d+) loss ([\d.]+) w \[([-\d.]+), ([-\d.]+)\]/g)].map((m) => ({ epoch: Number(m[1]), loss: Number(m[2]), w: [Number(m[3]), Number(m[4])] }));
  t.is(epochs.length, 30, stdout);
  t.deepEqual(epochs.map((e) => e.epoch), Array.from({ length: 30 }, (_, i) => i + 1));
  const first = epochs[0]!.loss;
  const last = epochs.at(-1)!.loss;
  t.true(first > 1, `first loss ${first}`);
  t.true(last < first / 100, `loss ${first} -> ${last}`);
  t.true(Math.abs(epochs.at(-1)!.w[0]! - 3) < 0.05 && Math.abs(epochs.at(-1)!.w[1]! + 2) < 0.05, `w ${epochs.at(-1)!.w.join(', ')}`);
  t.regex(stdout, /the gateway served \d+ requests \(0 faults\); python exited with 0/);
});
