/**
 * Runs one data-plane experiment (experiment-list.ts): two pairs of
 * tensorbus processes (a driver and a callee each), one with the mechanism
 * on (A) and one with it off (B), started side by side in each placement;
 * each case gets the same warm-up on both sides, then `rounds` pairs of
 * blocks, A then B, one pair after another, so a burst of load from
 * elsewhere falls on both halves of a pair alike. Each block gives one
 * median; each pair one ratio A/B of time per call (below 1: the mechanism
 * is faster). Each block also gives the CPU time its processes spent per
 * call (driver and callee; for the RL example every process of the run),
 * which is what polling trades for time. The load average is read before
 * and after each placement.
 * @module
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { namespacesRefused, TwoHosts } from '@tensorbus/nats-transport/testing';
import { startNatsServer } from '@tensorbus/nats-transport';
import { fileURLToPath } from 'node:url';
import { appCase } from '../apps/app-cases.js';
import { runExample } from '../apps/run-apps.js';
import { BenchChild } from '../process/bench-child.js';
import { childrenCpuMs, processCpuMs } from './cpu-time.js';
import { median } from '../stats.js';
import type { CallCase, ExampleCase, Experiment, ExperimentCase, Placement } from './experiment-list.js';

/** How an experiment runs. */
export interface ExperimentRunOptions {
  /** Pairs of blocks per case (A B A B ...). */
  rounds: number;
  /** Small warm-ups and blocks (a smoke test, not a measurement). */
  quick: boolean;
}

/** The pairs of one case in one placement. */
export interface CaseOutcome {
  placement: Placement;
  caseId: string;
  /** What each block's figure is: the median round trip (ms) or the time per RRef cycle (ms). */
  unit: string;
  /** One figure per block, in pair order. */
  on: number[];
  off: number[];
  /** A/B of each pair (time per call: below 1, the mechanism is faster). */
  ratios: number[];
  /** CPU ms per call (or per environment step) of each block's processes, in pair order; empty where /proc cannot be read. */
  onCpu: number[];
  offCpu: number[];
}

/** A placement that could not be measured, and why. */
export interface PlacementSkipped {
  placement: Placement;
  reason: string;
}

/** What an experiment measured. */
export interface ExperimentOutcome {
  experiment: Experiment;
  started: string;
  commit: string;
  rounds: number;
  quick: boolean;
  outcomes: CaseOutcome[];
  skipped: PlacementSkipped[];
  /** Load average (1, 5, 15 min) before and after each placement. */
  load: Array<{ placement: Placement; before: string; after: string }>;
}

const NATS_MAX_PAYLOAD = 64 * 2 ** 20;
/** The veth pair's /24 (the bench's two-host part uses 10.213.0, the tests 10.211.0). */
const SUBNET = '10.214.0';
/** Delay netem adds on each end of the veth pair, ms. */
const NETEM_DELAY_MS = 1;

/** A driver and its callee with one side's environment. */
interface Side {
  caller: BenchChild;
  callee: BenchChild;
}

/** Where the processes of a placement run: how to launch them and with what addresses. */
interface Where {
  natsUrl: string;
  launch?: (host: 0 | 1) => (command: string, args: string[]) => [string, string[]];
  address?: (host: 0 | 1) => string;
}

async function startSide(where: Where, name: string, env: Record<string, string>): Promise<Side> {
  const common = { ...env, NATS_URL: where.natsUrl, TENSORBUS_BENCH_NAMESPACE: `exp-${name}`, TENSORBUS_QUIET: '1' };
  const host = (i: 0 | 1): Record<string, string> => (where.address ? { TENSORBUS_BENCH_DIRECT_HOST: where.address(i) } : {});
  const callee = await BenchChild.start({ label: `callee (${name})`, script: 'systems/tensorbus-callee.js', env: { ...common, ...host(1) }, launcher: where.launch?.(1) });
  const caller = await BenchChild.start({
    label: `driver (${name})`,
    script: 'systems/tensorbus-caller.js',
    args: ['--transport', 'nats'],
    env: { ...common, ...host(0) },
    launcher: where.launch?.(0),
  }).catch(async (error: Error) => {
    await callee.stop();
    throw error;
  });
  return { caller, callee };
}

async function stopSide(side: Side): Promise<void> {
  await side.caller.stop();
  await side.callee.stop();
}

/** Warm-up and block of case `c`: [first warm-up, warm-up of later blocks, calls per block]. */
function blockPlan(c: CallCase, quick: boolean): [number, number, number] {
  if (c.kind === 'rref') return quick ? [200, 0, 100] : [6000, 0, 500];
  const bytes = c.bytes ?? 0;
  if (bytes <= 65_536) return quick ? [300, 0, 200] : [6000, 0, 1000];
  if (bytes <= 8 * 2 ** 20) return quick ? [20, 5, 10] : [300, 25, 30];
  if (bytes <= 64 * 2 ** 20) return quick ? [1, 0, 2] : [2, 1, 5];
  return quick ? [1, 0, 1] : [1, 0, 2];
}

/** The repository (this file is packages/examples/dist/src/bench/experiments/run-experiment.js). */
const REPOSITORY = fileURLToPath(new URL('../../../../../../', import.meta.url));
/** Episode rounds of the RL example per block. */
const RL_EPISODES = 30;

/** A block's figures: ms per call (or step), and CPU ms per call (or step) when it could be read. */
interface BlockFigures {
  ms: number;
  cpuMs?: number;
}

/**
 * One run of the example of case `c` through `tensorbus launch` with `env`:
 * ms per unit of its rate (an environment step, an update, a sample). For
 * the RL example also the CPU per step (every process of the run, start-up
 * included); the other examples' blocks give time only.
 */
async function appBlock(c: ExampleCase, env: Record<string, string>, quick: boolean): Promise<BlockFigures> {
  const app = appCase(c.app);
  const build = { label: 'experiment', root: REPOSITORY, env: { ...env, TENSORBUS_QUIET: '1' } };
  if (app.id !== 'rl') return { ms: 1000 / (await runExample(app, build, quick)) };
  const episodes = quick ? 5 : RL_EPISODES;
  const cpuBefore = childrenCpuMs();
  let steps = 0;
  const countSteps = (out: string) => {
    const summary = JSON.parse(readFileSync(join(out, 'rl.json'), 'utf8')) as { observers: number; curve: Array<{ meanReward: number }> };
    steps = summary.curve.reduce((sum, c) => sum + c.meanReward, 0) * summary.observers;
  };
  const rate = await runExample(app, build, quick, (out) => ['--max-episodes', String(episodes), '--out', out], countSteps);
  const cpuAfter = childrenCpuMs();
  const cpuMs = cpuBefore === undefined || cpuAfter === undefined || !steps ? undefined : (cpuAfter - cpuBefore) / steps;
  return { ms: 1000 / rate, cpuMs };
}

/** What a block's figure of case `c` is (for an example: per one of what its rate counts). */
function unitOf(c: ExperimentCase): string {
  if (c.kind !== 'app') return c.kind === 'rref' ? 'ms per RRef cycle' : 'ms per round trip';
  const app = appCase(c.app);
  return `ms per ${app.unit.replace(/s$/, '')} (${app.title})`;
}

/** How a block of case `c` runs on one side (its environment for an example), in round `round`. */
type BlockRun = (side: Side, env: Record<string, string>, round: number) => Promise<BlockFigures>;

function blockRunner(c: ExperimentCase, quick: boolean): BlockRun {
  if (c.kind === 'app') return (_side, env) => appBlock(c, env, quick);
  const [warmup, rewarm, calls] = blockPlan(c, quick);
  return (side, _env, round) => block(side, c, round === 0 ? warmup : rewarm, calls);
}

/** One block of `c` on `side`: ms per call, and the driver's and callee's CPU ms per call (warm-up excluded). */
async function block(side: Side, c: CallCase, warmup: number, calls: number): Promise<BlockFigures> {
  const pids = [side.caller.pid, side.callee.pid];
  if (c.kind === 'rref') {
    if (warmup > 0) await side.caller.request('rref', { plan: { window: 1, calls: warmup, rounds: 1, warmupCalls: 0 } });
    const cpuBefore = processCpuMs(pids);
    const answer = await side.caller.request<{ rounds: number[] }>('rref', { plan: { window: 1, calls, rounds: 1, warmupCalls: 0 } });
    return { ms: 1000 / median(answer.rounds), cpuMs: perCall(cpuBefore, processCpuMs(pids), calls) };
  }
  if (warmup > 0) await side.caller.request('latency', { bytes: c.bytes, plan: { warmup: 0, reps: warmup } });
  const cpuBefore = processCpuMs(pids);
  const answer = await side.caller.request<{ samplesMs: number[]; timeouts?: number }>('latency', { bytes: c.bytes, plan: { warmup: 0, reps: calls } });
  if (answer.timeouts) throw new Error(`${answer.timeouts} calls of ${c.id} timed out`);
  return { ms: median(answer.samplesMs), cpuMs: perCall(cpuBefore, processCpuMs(pids), calls) };
}

function perCall(before: number | undefined, after: number | undefined, calls: number): number | undefined {
  return before === undefined || after === undefined ? undefined : (after - before) / calls;
}

async function runCases(e: Experiment, placement: Placement, a: Side, b: Side, options: ExperimentRunOptions): Promise<CaseOutcome[]> {
  const out: CaseOutcome[] = [];
  for (const c of e.cases) {
    const run = blockRunner(c, options.quick);
    const outcome: CaseOutcome = { placement, caseId: c.id, unit: unitOf(c), on: [], off: [], ratios: [], onCpu: [], offCpu: [] };
    for (let r = 0; r < options.rounds; r++) {
      const on = await run(a, e.on, r);
      const off = await run(b, e.off, r);
      outcome.on.push(on.ms);
      outcome.off.push(off.ms);
      outcome.ratios.push(on.ms / off.ms);
      if (on.cpuMs !== undefined && off.cpuMs !== undefined) {
        outcome.onCpu.push(on.cpuMs);
        outcome.offCpu.push(off.cpuMs);
      }
      const cpu = on.cpuMs !== undefined && off.cpuMs !== undefined ? `; CPU on ${on.cpuMs.toFixed(3)} ms, off ${off.cpuMs.toFixed(3)} ms` : '';
      console.log(`  ${placement} ${c.id} pair ${r + 1}/${options.rounds}: on ${on.ms.toFixed(3)} ms, off ${off.ms.toFixed(3)} ms, A/B ${(on.ms / off.ms).toFixed(2)}${cpu}`);
    }
    out.push(outcome);
  }
  return out;
}

const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');

async function onOneHost(e: Experiment, options: ExperimentRunOptions, result: ExperimentOutcome): Promise<void> {
  const nats = await startNatsServer({ maxPayload: NATS_MAX_PAYLOAD });
  const before = load();
  try {
    const where: Where = { natsUrl: nats.url };
    const a = await startSide(where, 'on', e.on);
    const b = await startSide(where, 'off', e.off);
    try {
      result.outcomes.push(...(await runCases(e, 'one-host', a, b, options)));
    } finally {
      await Promise.all([stopSide(a), stopSide(b)]);
    }
  } finally {
    result.load.push({ placement: 'one-host', before, after: load() });
    await nats.stop();
  }
}

async function betweenHosts(e: Experiment, placements: Placement[], options: ExperimentRunOptions, result: ExperimentOutcome): Promise<void> {
  const refused = namespacesRefused();
  if (refused) {
    for (const placement of placements) result.skipped.push({ placement, reason: refused });
    return;
  }
  const hosts = new TwoHosts({ subnet: SUBNET });
  try {
    const [addressA] = hosts.addresses;
    await hosts.natsServer(0, `listen: ${addressA}:4222\nmax_payload: ${NATS_MAX_PAYLOAD}`);
    const where: Where = { natsUrl: `nats://${addressA}:4222`, launch: (i) => (command, args) => hosts.wrap(i, command, args), address: (i) => hosts.addresses[i] };
    const a = await startSide(where, 'on', e.on);
    const b = await startSide(where, 'off', e.off);
    try {
      for (const placement of placements) {
        if (placement === 'two-hosts-netem') {
          try {
            hosts.addDelay(NETEM_DELAY_MS);
          } catch (error) {
            result.skipped.push({ placement, reason: (error as Error).message });
            continue;
          }
        }
        const before = load();
        try {
          result.outcomes.push(...(await runCases(e, placement, a, b, options)));
        } finally {
          result.load.push({ placement, before, after: load() });
          hosts.removeDelay();
        }
      }
    } finally {
      await Promise.all([stopSide(a), stopSide(b)]);
    }
  } finally {
    hosts.remove();
  }
}

/** The commit measured: `TENSORBUS_BENCH_COMMIT` when the run is from a copy of a build, else git's HEAD (and whether the tree differs). */
function commitNow(): string {
  if (process.env.TENSORBUS_BENCH_COMMIT) return process.env.TENSORBUS_BENCH_COMMIT;
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head} (with uncommitted changes)` : head;
  } catch {
    return 'unknown';
  }
}

/** Runs experiment `e` in each of its placements (see the module). */
export async function runExperiment(e: Experiment, options: ExperimentRunOptions): Promise<ExperimentOutcome> {
  const result: ExperimentOutcome = { experiment: e, started: new Date().toISOString(), commit: commitNow(), rounds: options.rounds, quick: options.quick, outcomes: [], skipped: [], load: [] };
  console.log(`experiment ${e.name}: ${e.mechanism}`);
  if (e.placements.includes('one-host')) await onOneHost(e, options, result);
  const twoHostPlacements = e.placements.filter((p) => p !== 'one-host');
  if (twoHostPlacements.length > 0) await betweenHosts(e, twoHostPlacements, options, result);
  return result;
}
