import test from 'ava';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchExample } from './run-examples.js';


test.serial('examples - parameter server: 2 trainers in 3 processes learn iris through batched updates', async (t) => {
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

/** Resolves once `pattern` is in `output()`, within `timeoutMs`. */
async function seen(output: () => string, pattern: RegExp, timeoutMs = 120_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = pattern.exec(output());
    if (match) return match;
    if (Date.now() > deadline) throw new Error(`not printed in time: ${pattern}\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function finalAccuracy(out: string): { epochs: number[]; accuracy: number } {
  const result = JSON.parse(readFileSync(join(out, 'parameter-server.json'), 'utf8')) as { curve: Array<{ epoch: number; testAccuracy: number }> };
  return { epochs: result.curve.map((c) => c.epoch), accuracy: result.curve[result.curve.length - 1]!.testAccuracy };
}

test.serial('examples - parameter server: ps killed with kill -9 mid-run is restarted, restores its checkpoint, and the run ends with the accuracy of an uninterrupted one', async (t) => {
  const names = ['ps', 'trainer1', 'trainer2'];
  const plain = mkdtempSync(join(tmpdir(), 'tb-ps-plain-'));
  const uninterrupted = await launchExample(names, 'parameter-server/main.js', ['--epochs', '12', '--out', plain]);
  t.is(uninterrupted.code, 0, uninterrupted.stdout);
  const out = mkdtempSync(join(tmpdir(), 'tb-ps-killed-'));
  let killedAfter = 0;
  const killed = await launchExample(names, 'parameter-server/main.js', ['--epochs', '12', '--checkpoint-every', '2', '--pace', '200', '--out', out], {
    launcherArgs: ['--max-restarts', '1'],
    during: async (output) => {
      const pid = Number((await seen(output, /parameter server on 'ps' \(pid (\d+)\)/))[1]);
      await seen(output, /\[ps\s*\] epoch\s+5\/12/);
      killedAfter = Math.max(...[...output().matchAll(/\[ps\s*\] epoch\s+(\d+)\/12/g)].map((m) => Number(m[1])));
      process.kill(pid, 'SIGKILL');
    },
  });
  t.is(killed.code, 0, killed.stdout);
  t.regex(killed.stderr, /ps exited with SIGKILL: restarting it \(restart 1/);
  const restored = Number(/\[ps\s*\] restart 1: restored the checkpoint of epoch (\d+)/.exec(killed.stdout)?.[1]);
  t.true(restored >= 4 && killedAfter - restored <= 2, `killed after epoch ${killedAfter}, restored epoch ${restored}: at most 2 epochs lost`);
  for (const trainer of ['trainer1', 'trainer2']) t.regex(killed.stdout, new RegExp(`\\[${trainer}\\s*\\] ps is back at step ${restored * 8}`));
  const a = finalAccuracy(plain);
  const b = finalAccuracy(out);
  t.deepEqual(b.epochs, Array.from({ length: 13 }, (_, i) => i), 'one curve point per epoch, as if never interrupted');
  // Within one of the 30 held-out examples.
  t.true(Math.abs(a.accuracy - b.accuracy) <= 1 / 30 + 1e-9, `uninterrupted ${a.accuracy}, killed and restored ${b.accuracy}`);
});
