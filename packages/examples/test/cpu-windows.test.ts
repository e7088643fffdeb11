/**
 * The bench's CPU-per-step windows (src/bench/apps/cpu-windows.ts) count an
 * application's steps from what the example prints, and read a worker's CPU
 * from /proc: both are checked here against real runs of the examples and
 * a real process.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { parseWindows, WINDOWED_CASES, workersUnder } from '../src/bench/apps/cpu-windows.js';
import { processCpuMs } from '../src/bench/experiments/cpu-time.js';
import { launchExample } from './run-examples.js';

const caseOf = (id: string) => WINDOWED_CASES.find((c) => c.id === id)!;

test('cpu windows - the RL example\'s steps are counted from its round lines as its own summary counts them', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'windows-rl-'));
  const { code, stdout } = await launchExample(['agent', 'observer1', 'observer2'], 'rl/main.js', ['--max-episodes', '4', '--out', out]);
  t.is(code, 0);
  const summary = JSON.parse(readFileSync(join(out, 'rl.json'), 'utf8')) as { steps: number };
  t.true(summary.steps > 0);
  // Each round line gives the mean to a tenth: at most 0.05 off per observer and round.
  t.true(Math.abs(caseOf('rl').stepsIn(stdout) - summary.steps) <= 4 * 2 * 0.05 + 1e-9, `${caseOf('rl').stepsIn(stdout)} counted, ${summary.steps} in rl.json`);
});

test('cpu windows - the parameter server\'s steps are its last epoch times the batched updates of an epoch', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'windows-ps-'));
  const { code, stdout } = await launchExample(['ps', 'trainer1', 'trainer2'], 'parameter-server/main.js', ['--epochs', '3', '--out', out]);
  t.is(code, 0);
  const perEpoch = Number(/epochs of (\d+) batched updates/.exec(stdout)![1]);
  t.true(perEpoch > 0);
  t.is(caseOf('parameter-server').stepsIn(stdout), 3 * perEpoch);
  t.is(caseOf('parameter-server').stepsIn(''), 0, 'nothing printed yet: no steps');
});

test('cpu windows - a worker is found under its launcher by name, and its CPU time grows while it computes', async (t) => {
  const parent = spawn(process.execPath, ['-e', `require('node:child_process').spawn(process.execPath, ['-e', 'const end = Date.now() + 6000; while (Date.now() < end);'], { stdio: 'inherit', env: { ...process.env, TENSORBUS_NAME: 'busy1' } }).on('exit', () => process.exit(0))`], { stdio: 'inherit' });
  t.teardown(() => parent.kill());
  let workers = new Map<string, number>();
  for (let i = 0; i < 50 && !workers.has('busy1'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    workers = workersUnder(parent.pid!);
  }
  const pid = workers.get('busy1');
  t.truthy(pid, 'the grandchild is found by its TENSORBUS_NAME');
  // Read until it has computed 100 ms (a loaded machine gives a spinner a fraction of a core), for at most 4 s of its 6.
  const before = processCpuMs([pid!])!;
  const started = Date.now();
  let after = before;
  while (after - before <= 100 && Date.now() - started < 4_000) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    after = processCpuMs([pid!]) ?? after;
  }
  t.true(after - before > 100, `a spinning process gained ${(after - before).toFixed(0)} ms of CPU in ${Date.now() - started} ms`);
  await new Promise((resolve) => parent.once('exit', resolve));
  t.is(processCpuMs([pid!]), undefined, 'a process that ended has no CPU time to read');
});

test('cpu windows - windows are from-to seconds after launch; anything else is refused', (t) => {
  t.deepEqual(parseWindows('7-12,25-30'), [[7, 12], [25, 30]]);
  t.deepEqual(parseWindows('0.5-2'), [[0.5, 2]]);
  for (const bad of ['12-7', '7', '7-7', 'a-b', '7-12,']) t.throws(() => parseWindows(bad), { message: /--windows/ }, bad);
});
