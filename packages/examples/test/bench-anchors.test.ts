/**
 * The PyTorch anchor scripts the bench runs live in the repository
 * (packages/examples/bench-anchors), and each is given the warm-up tensorbus
 * gets for the same case. Stand-in scripts (run by node, in a folder given as
 * the anchors) print the warm-up they were given as their figure, so what the
 * bench passes is checked without PyTorch.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));

/** Stand-ins that answer every case with the warm-up they were given (their command line, as the real scripts read it). */
const STAND_INS = {
  // torch_rpc.py [--noop-warmup N] [bytes:warmup ...]
  'torch_rpc.py': `
    const args = process.argv.slice(2);
    let noop = 200;
    if (args[0] === '--noop-warmup') { noop = Number(args[1]); args.splice(0, 2); }
    console.log(JSON.stringify({ system: 'stand-in', case: 'noop', bytes: 0, median_us: noop }));
    for (const a of args) { const [b, w] = a.split(':'); console.log(JSON.stringify({ system: 'stand-in', case: 'identity', bytes: Number(b), median_us: Number(w ?? -1) })); }`,
  // torch_rpc_throughput.py window calls warmup
  'torch_rpc_throughput.py': `console.log(JSON.stringify({ system: 'stand-in', case: 'async-noop-throughput', calls_per_s: Number(process.argv[4] ?? -1) }));`,
  // torch_rref_autograd.py --rref-warmup N --autograd-warmup N
  'torch_rref_autograd.py': `
    const flag = (name) => { const i = process.argv.indexOf(name); return i < 0 ? -1 : Number(process.argv[i + 1]); };
    console.log(JSON.stringify({ system: 'stand-in', case: 'rref', calls_per_s: flag('--rref-warmup') }));
    console.log(JSON.stringify({ system: 'stand-in', case: 'autograd', median_us: flag('--autograd-warmup') }));`,
};

async function benchWithStandIns() {
  const dir = mkdtempSync(join(tmpdir(), 'anchors-'));
  for (const [name, code] of Object.entries(STAND_INS)) writeFileSync(join(dir, name), code);
  process.env.TENSORBUS_ANCHORS_DIR = dir;
  process.env.TENSORBUS_PYTHON = process.execPath;
  const runner = await import('../src/bench/runner.js');
  const { CASES, casePlan } = await import('../src/bench/cases.js');
  return { runner, CASES, casePlan };
}

/** What the bench gives tensorbus before timing case `c`: every block's untimed calls, counted here from the plan itself. */
function tensorbusWarmup(casePlan: typeof import('../src/bench/cases.js').casePlan, c: import('../src/bench/cases.js').BenchCase, quick: boolean): number {
  const plan = casePlan(c, quick);
  let sum = 0;
  for (let b = 0; b < plan.blocks; b++) {
    const p = plan.params(b).plan as { warmup?: number; warmupCalls?: number };
    sum += p.warmup ?? p.warmupCalls ?? 0;
  }
  return sum;
}

for (const quick of [false, true]) {
  const run = quick ? 'quick run' : 'full run';
  test.serial(`bench - ${run} - every PyTorch case is warmed up with as many calls as tensorbus's same case`, async (t) => {
    const { runner, CASES, casePlan } = await benchWithStandIns();
    const latency = CASES.filter((c) => c.kind === 'latency');
    const { results } = await runner.runPytorchLatency(latency, false, quick);
    t.is(results.length, latency.length);
    for (const c of latency) {
      const given = results.find((r) => r.caseId === c.id)!.medianMs! * 1000;
      t.is(given, tensorbusWarmup(casePlan, c, quick), `${c.id}: PyTorch's warm-up`);
    }
    const rateCase = CASES.find((c) => c.kind === 'rate')!;
    const rate = await runner.runPytorchRate(rateCase, 1, 100, quick);
    t.is(rate.perSecond, tensorbusWarmup(casePlan, rateCase, quick), 'async calls: PyTorch\'s warm-up');
    const protocols = CASES.filter((c) => c.kind === 'rref' || c.kind === 'autograd');
    for (const r of await runner.runPytorchProtocols(protocols, quick)) {
      const c = protocols.find((p) => p.id === r.caseId)!;
      t.is(r.perSecond ?? r.medianMs! * 1000, tensorbusWarmup(casePlan, c, quick), `${c.id}: PyTorch's warm-up`);
    }
  });
}

test.serial('bench - PyTorch\'s round trips run three times in a full run, each case\'s figure the median of the runs\' medians', async (t) => {
  const { runner, CASES } = await benchWithStandIns();
  // A stand-in whose figure is the next of 9, 2, 1 µs: the median (2) is neither the first, the last nor the mean run.
  const counter = join(process.env.TENSORBUS_ANCHORS_DIR!, 'runs');
  writeFileSync(counter, '0');
  writeFileSync(
    join(process.env.TENSORBUS_ANCHORS_DIR!, 'torch_rpc.py'),
    `const fs = require('node:fs');
    const run = Number(fs.readFileSync(${JSON.stringify(counter)}, 'utf8'));
    fs.writeFileSync(${JSON.stringify(counter)}, String(run + 1));
    const us = [9, 2, 1][run];
    console.log(JSON.stringify({ system: 'stand-in', case: 'noop', bytes: 0, median_us: us }));
    for (const a of process.argv.slice(2)) if (/^\\d+:/.test(a)) console.log(JSON.stringify({ system: 'stand-in', case: 'identity', bytes: Number(a.split(':')[0]), median_us: us * 10 }));`,
  );
  const latency = CASES.filter((c) => c.id === 'noop' || c.id === '4MB');
  const { results } = await runner.runPytorchLatency(latency, false, false, 3);
  t.is(readFileSync(counter, 'utf8'), '3', 'the script ran three times');
  const noop = results.find((r) => r.caseId === 'noop')!;
  const mb4 = results.find((r) => r.caseId === '4MB')!;
  t.is(noop.medianMs! * 1000, 2);
  t.deepEqual(noop.runMediansMs!.map((ms) => Math.round(ms * 1000)), [9, 2, 1]);
  t.is(Math.round(mb4.medianMs! * 1000), 20);
});

test('bench - the anchor scripts are in the repository, and no file points outside it for them', (t) => {
  for (const script of ['torch_rpc.py', 'torch_rpc_throughput.py', 'torch_rref_autograd.py', 'pytorch-rl/main.py', 'pytorch-rl/gym/__init__.py', 'pytorch-rl/gymnasium/__init__.py']) {
    t.true(existsSync(join(REPO, 'packages/examples/bench-anchors', script)), script);
  }
  const files = execFileSync('git', ['-C', REPO, 'ls-files'], { encoding: 'utf8' }).split('\n').filter((f) => /\.(ts|md|py|json|mjs|sh)$/.test(f));
  t.true(files.length > 100, `${files.length} files listed`);
  const pointing = files.filter((f) => {
    const text = readFileSync(join(REPO, f), 'utf8');
    // Spelled in pieces, so this file does not name what it looks for.
    return text.includes(['shared', 'anchors'].join('/')) || text.includes(['..', 'shared', ''].join('/'));
  });
  t.deepEqual(pointing, []);
});
