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
import type { NodeSystem } from '../src/bench/systems/node-systems.js';

const PEAK_BYTES = 400 * 2 ** 20;

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
  test.serial(`bench - ${run} - every run of a PyTorch case is warmed up with as many calls as tensorbus's whole case`, async (t) => {
    const { runner, CASES, casePlan } = await benchWithStandIns();
    for (const c of CASES.filter((x) => x.bytes !== PEAK_BYTES)) {
      const figure = await runner.runPytorchCase(c, quick);
      t.is(figure.perSecond ?? figure.medianMs! * 1000, tensorbusWarmup(casePlan, c, quick), `${c.id}: PyTorch's warm-up`);
    }
    const peak = CASES.find((c) => c.bytes === PEAK_BYTES)!;
    const { medianMs } = await runner.runPytorchRoundTrip(peak, quick, false);
    t.is(medianMs * 1000, tensorbusWarmup(casePlan, peak, quick), "400 MB: PyTorch's warm-up");
  });
}

test.serial('bench - PyTorch runs once in each block of a case, each block starting one system later than the one before, and its figure is the median of its runs', async (t) => {
  const { runner, CASES, casePlan } = await benchWithStandIns();
  const c = CASES.find((x) => x.id === '4MB')!;
  t.is(casePlan(c, false).blocks, 3);
  const order: string[] = [];
  // Two Node systems answering each block with one sample, and a peer whose runs give 9, 2, 1 ms:
  // the median (2) is neither the first, the last nor the mean run.
  const nodeSystem = (id: string) =>
    ({
      id,
      kinds: new Set(['latency']),
      processes: [],
      caller: { request: async () => (order.push(id), { samplesMs: [5] }) },
      stop: async () => {},
    }) as unknown as NodeSystem;
  const node = nodeSystem('tcp');
  const figures = [9, 2, 1];
  const peer = {
    system: 'pytorch' as const,
    run: async () => {
      order.push('pytorch');
      return { medianMs: figures.shift()! };
    },
  };
  const results = await runner.runCase(c, [node, nodeSystem('nats')], false, new runner.Progress(1), peer);
  t.deepEqual(order, ['tcp', 'nats', 'pytorch', 'nats', 'pytorch', 'tcp', 'pytorch', 'tcp', 'nats']);
  const torch = results.find((r) => r.system === 'pytorch')!;
  t.is(torch.medianMs, 2);
  t.deepEqual(torch.runMediansMs, [9, 2, 1]);
  // A run that fails leaves PyTorch's figure out with the reason, and the case goes on without it.
  const failing = { system: 'pytorch' as const, run: () => Promise.reject(new Error('torch_rpc.py exited with 1')) };
  const partial = await runner.runCase(c, [node], false, new runner.Progress(1), failing);
  t.regex(partial.find((r) => r.system === 'pytorch')!.skipped!, /torch_rpc\.py exited with 1/);
  t.is(partial.find((r) => r.system === 'tcp')!.n, 3);
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
