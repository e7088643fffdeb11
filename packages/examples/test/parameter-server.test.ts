import test from 'ava';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchExample } from './launch-example.js';


test('examples - parameter server: 2 trainers in 3 processes learn iris through batched updates', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'tb-ps-'));
  const { code, stdout } = await launchExample(['ps', 'trainer1', 'trainer2'], 'parameter-server/main.js', ['--epochs', '12', '--out', out]);
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
