/**
 * Runs the application cases (app-cases.ts) on this build and, given one, on
 * a baseline build, in turn (each round runs every build once, in the order
 * of a balanced design: a burst of load from elsewhere hits both alike, and
 * neither always runs first, last or right after the same other), and PyTorch's RPC RL
 * example from `bench-anchors/pytorch-rl/` (its `main.py` with world size 5: one agent, 4
 * observers), each from a fresh set of processes and timed from the start of
 * training: no warm-up for either side. This build also runs with busy
 * polling off (`TENSORBUS_BUSY_POLL_US=0`; on by default), in the same
 * rounds: polling must never cost an application (issue 38), and the
 * column beside the default shows whether it does.
 * @module
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { balancedOrder, median } from '../stats.js';
import { anchorsDir, PYTHON } from '../systems/pytorch.js';
import { APP_CASES, appCase, rlForSeconds, type AppCase } from './app-cases.js';

/** A build to run the examples of. */
export interface Build {
  /** `this build` or the baseline's revision. */
  label: string;
  root: string;
  /** The root of the copy of this build's example programs that runs on this build's libraries, where it is not `root` (the baseline's). */
  programsRoot?: string;
  /** Set in the environment of the run, over the caller's. */
  env?: Record<string, string>;
}

/** The rate of one application case on one build (or PyTorch). */
export interface AppResult {
  caseId: AppCase['id'];
  /**
   * `tensorbus`, `no-poll` (this build, busy polling off), `baseline`,
   * `pytorch`, or `timed`: this build's RL example for as long as PyTorch's
   * runs (`--max-seconds`), the figure PyTorch's is compared with.
   */
  system: 'tensorbus' | 'no-poll' | 'baseline' | 'pytorch' | 'timed';
  /** Median over the runs, per second. */
  perSecond?: number;
  runs?: number[];
  /** Why there is no figure. */
  skipped?: string;
}

/** How long PyTorch's RL example runs (its `RL_SECONDS`), s. */
export const PYTORCH_RL_SECONDS = { quick: 10, full: 40 };

/** Runs `command` to its end; resolves with its stdout, rejects with the end of its stderr. */
function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs: number }): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
    const timer = setTimeout(() => child.kill('SIGTERM'), options.timeoutMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${signal ?? `exit ${code}`}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`));
    });
  });
}

/**
 * The node arguments that run example `c` through `build`'s own launcher
 * with `flags` (this build's copy of the program where `c.sameProgram`, the
 * build's own otherwise), and their environment.
 */
export function exampleLaunch(c: AppCase, build: Build, flags: string[]): { args: string[]; env: NodeJS.ProcessEnv } {
  const launcher = join(build.root, 'packages/actors/dist/src/cli/main.js');
  // The launcher starts its own nats-server; a NATS_URL of the caller's must not send both builds to one bus.
  const env: NodeJS.ProcessEnv = { ...process.env, ...build.env };
  delete env.NATS_URL;
  return { args: [launcher, 'launch', '-n', String(c.names.length), '--names', c.names.join(','), join(c.sameProgram ? (build.programsRoot ?? build.root) : build.root, c.script), ...flags], env };
}

/** One run of an example on a build: its rate; `args` replaces the case's own flags (given the run's out folder). */
export async function runExample(c: AppCase, build: Build, quick: boolean, args?: (out: string) => string[], inspect?: (out: string) => void): Promise<number> {
  const out = mkdtempSync(join(tmpdir(), `tensorbus-bench-${c.id}-`));
  try {
    const { args: command, env } = exampleLaunch(c, build, args ? args(out) : c.args(quick, out));
    const stdout = await run(process.execPath, command, { cwd: build.root, env, timeoutMs: 15 * 60_000 });
    const rate = c.rate(stdout, out);
    inspect?.(out);
    return rate;
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

/** PyTorch's RL example, 4 observers, for `seconds`: its last `STEPS` line's steps/s. */
export async function runPytorchRl(seconds: number): Promise<number> {
  const dir = join(anchorsDir(), 'pytorch-rl');
  const env = { ...process.env, PYTHONPATH: dir, RL_SECONDS: String(seconds) };
  const stdout = await run(PYTHON, [join(dir, 'main.py'), '--world-size', '5'], { cwd: dir, env, timeoutMs: (seconds + 300) * 1000 });
  const lines = [...stdout.matchAll(/^STEPS \d+ (\d+) [\d.]+s (\d+) steps\/s$/gm)];
  if (lines.length === 0) throw new Error('PyTorch RL example printed no STEPS line');
  return Number(lines[lines.length - 1]![2]);
}

/** One of the things an application case runs in turn: its row in the results, its progress line, and one run's rate. */
export interface Contender {
  system: AppResult['system'];
  title: string;
  /** Printed after each rate. */
  unit: string;
  run: () => Promise<number>;
}

/**
 * Runs `contenders` in turn, `runs` times each, printing each rate as it
 * comes; one that fails runs no more and is reported skipped with why. The
 * rounds follow a Williams design ({@link balancedOrder}), so each contender
 * runs in each place, and right after each other contender, about equally
 * often; with a plain rotation each ran right after the same other in every
 * round (this build after the baseline, for three). Each result is the
 * median of its runs.
 */
export async function inTurn(caseId: AppResult['caseId'], contenders: Contender[], runs: number): Promise<AppResult[]> {
  const rates = new Map<AppResult['system'], number[]>(contenders.map((c) => [c.system, []]));
  const failed = new Map<AppResult['system'], string>();
  for (let r = 0; r < runs; r++) {
    for (const contender of balancedOrder(contenders, r)) {
      if (failed.has(contender.system)) continue;
      process.stdout.write(`        ${contender.title}, run ${r + 1}/${runs} ... `);
      try {
        const rate = await contender.run();
        rates.get(contender.system)!.push(rate);
        console.log(`${rate.toFixed(1)} ${contender.unit}`);
      } catch (error) {
        failed.set(contender.system, `failed: ${(error as Error).message}`);
        console.log(`failed: ${(error as Error).message}`);
      }
    }
  }
  return contenders.map(({ system }): AppResult => {
    const got = rates.get(system)!;
    return failed.has(system) ? { caseId, system, skipped: failed.get(system) } : { caseId, system, perSecond: median(got), runs: got };
  });
}

/**
 * Every application case on this build and the baseline (runs in turn), then
 * PyTorch's RL example when `pytorch` is set; prints each figure as it comes.
 * `runs`: runs of each build per case and of each side beside PyTorch
 * (default 5 and 3, 1 with `quick`).
 */
export async function runApps(current: Build, baseline: Build | undefined, options: { quick: boolean; pytorch: boolean; runs?: number }): Promise<AppResult[]> {
  const results: AppResult[] = [];
  const runsEach = options.runs ?? (options.quick ? 1 : 5);
  const runsBesidePytorch = options.runs ?? (options.quick ? 1 : 3);
  for (const c of APP_CASES) {
    const noPoll: Build = { ...current, label: `${current.label}, TENSORBUS_BUSY_POLL_US=0`, env: { ...current.env, TENSORBUS_BUSY_POLL_US: '0' } };
    const builds: Array<[AppResult['system'], Build]> = [['tensorbus', current], ['no-poll', noPoll], ...(baseline ? [['baseline', baseline] as [AppResult['system'], Build]] : [])];
    const contenders = builds.map(([system, build]): Contender => ({ system, title: `${c.title}, ${build.label}`, unit: `${c.unit}/s`, run: () => runExample(c, build, options.quick) }));
    results.push(...(await inTurn(c.id, contenders, runsEach)));
  }
  if (options.pytorch) results.push(...(await runBesidePytorch(current, options.quick, runsBesidePytorch)));
  return results;
}

/**
 * This build's RL example for PyTorch's fixed time (`--max-seconds`) and
 * PyTorch's RPC RL example, in turn (which goes first alternates), `runs`
 * times each (3 in a full run: one run of PyTorch's moved by a third from
 * the next on this machine): the medians are compared, since the steps/s of
 * a run climb as its episodes lengthen and only runs of the same length
 * compare.
 */
function runBesidePytorch(current: Build, quick: boolean, runs: number): Promise<AppResult[]> {
  const seconds = quick ? PYTORCH_RL_SECONDS.quick : PYTORCH_RL_SECONDS.full;
  const rl = appCase('rl');
  return inTurn(
    'rl',
    [
      { system: 'timed', title: `${rl.title}, ${current.label}, the first ${seconds} s of training`, unit: `${rl.unit}/s`, run: () => runExample(rl, current, quick, (out) => rlForSeconds(seconds, out)) },
      { system: 'pytorch', title: `PyTorch RPC RL example (bench-anchors/pytorch-rl/main.py, world size 5), ${seconds} s`, unit: 'steps/s', run: () => runPytorchRl(seconds) },
    ],
    runs,
  );
}
