import test from 'ava';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../../../actors/dist/src/cli/main.js', import.meta.url));
const main = fileURLToPath(new URL('../src/parameter-server/main.js', import.meta.url));

test('examples - parameter server: 2 trainers in 3 processes learn iris through batched updates', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'tb-ps-'));
  const child = spawn(process.execPath, [cli, 'launch', '-n', '3', '--names', 'ps,trainer1,trainer2', main, '--epochs', '12', '--out', out], {
    env: { ...process.env, NATS_URL: '', TENSORBUS_QUIET: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.is(code, 0, stdout);
  t.regex(stdout, /\[ps\s*\] epoch\s+12\/12 \[#+\]/, 'progress is shown per epoch');
  t.regex(stdout, /final test accuracy/);
  const result = JSON.parse(readFileSync(join(out, 'parameter-server.json'), 'utf8')) as {
    curve: Array<{ epoch: number; trainLoss: number; testAccuracy: number }>;
  };
  const first = result.curve[0]!;
  const last = result.curve[result.curve.length - 1]!;
  t.is(last.epoch, 12);
  t.true(last.trainLoss < first.trainLoss * 0.7, `loss fell from ${first.trainLoss} to ${last.trainLoss}`);
  t.true(last.testAccuracy >= 0.8, `held-out accuracy ${last.testAccuracy}`);
  t.true(existsSync(join(out, 'parameter-server.svg')));
});
