/**
 * CPU per step of an application, by process, in windows of one long run:
 * what the application table's rates (timed from the start of training)
 * cannot tell apart — the first seconds, while every process's JIT and
 * caches warm up, and the steady state a long training run spends its time
 * in. This build and the `--baseline` build run in turn, each from a fresh
 * set of processes (`tensorbus launch`, as a user runs them).
 *
 *   npm run bench:windows -- --case rl|parameter-server
 *        [--baseline <git rev>] [--windows 7-12,25-30] [--pairs 2]
 *
 * In each window (seconds after launch) it reads every worker's CPU time
 * (user and system, all its threads, `/proc/<pid>/stat`) and
 * the steps the example reported so far (its own progress lines, which
 * every build prints), and prints CPU per step for each worker and in all,
 * and the steps per second. A window the run does not last to is reported
 * as such (the RL example stops once it solves CartPole).
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from '../stats.js';
import { DEFAULT_BASELINE } from '../options.js';
import { appCase } from './app-cases.js';
import { baselineBuild, prepareBaseline } from './baseline-build.js';
import { exampleLaunch, type Build } from './run-apps.js';
import { argValue } from '../process/child-channel.js';
import { descendants } from '../process/memory.js';
import { processCpuMs } from '../experiments/cpu-time.js';

/** An application run long enough to be measured in windows, and how its progress is read. */
export interface WindowedCase {
  id: 'rl' | 'parameter-server';
  /** Flags that keep the example running past the last window (it is stopped after it). */
  longArgs(out: string): string[];
  /** Steps reported so far in the example's output. */
  stepsIn(output: string): number;
}

/** RL: each round line gives the observers' mean episode reward, which is the mean of their steps (CartPole pays 1 a step). */
function rlSteps(output: string): number {
  const observers = Number(/agent: (\d+) observers/.exec(output)?.[1] ?? 0);
  let steps = 0;
  for (const m of output.matchAll(/episode +\d+ +last reward +\d+ \(mean +([\d.]+)\)/g)) steps += Number(m[1]) * observers;
  return steps;
}

/** Parameter server: the last epoch line times the batched updates of an epoch (its first line). */
function psSteps(output: string): number {
  const perEpoch = Number(/epochs of (\d+) batched updates/.exec(output)?.[1] ?? 0);
  const epochs = [...output.matchAll(/epoch +(\d+)\/\d+/g)];
  return epochs.length === 0 ? 0 : Number(epochs[epochs.length - 1]![1]) * perEpoch;
}

/** The cases this tool measures. */
export const WINDOWED_CASES: WindowedCase[] = [
  { id: 'rl', longArgs: (out) => ['--max-episodes', '100000', '--out', out], stepsIn: rlSteps },
  { id: 'parameter-server', longArgs: (out) => ['--epochs', '100000', '--out', out], stepsIn: psSteps },
];

/** The worker processes under `root` (any depth), by their `TENSORBUS_NAME`. */
export function workersUnder(root: number): Map<string, number> {
  const workers = new Map<string, number>();
  for (const pid of descendants(root)) {
    try {
      const name = /(?:^|\0)TENSORBUS_NAME=([^\0]+)/.exec(readFileSync(`/proc/${pid}/environ`, 'utf8'))?.[1];
      if (name !== undefined) workers.set(name, pid);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return workers;
}

/** One window of one run: CPU per step of each worker and in all, µs, and the rate. */
export interface WindowFigures {
  steps: number;
  perSecond: number;
  cpuPerStepUs: Record<string, number>;
  totalPerStepUs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One long run of `c` on `build`, measured in `windows` ([from, to] s after launch). */
async function measureRun(c: WindowedCase, build: Build, windows: Array<[number, number]>): Promise<Array<WindowFigures | undefined>> {
  const root = build.root;
  const app = appCase(c.id);
  const out = mkdtempSync(join(tmpdir(), `tensorbus-windows-${c.id}-`));
  const { args, env } = exampleLaunch(app, build, c.longArgs(out));
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'ignore'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let ended = false;
  void exited.then(() => (ended = true));
  const started = Date.now();
  const figures: Array<WindowFigures | undefined> = [];
  try {
    for (const [from, to] of windows) {
      await sleep(Math.max(0, started + from * 1000 - Date.now()));
      const workers = workersUnder(child.pid!);
      const before = new Map([...workers].map(([name, pid]) => [name, processCpuMs([pid])]));
      const stepsBefore = c.stepsIn(output);
      const t0 = Date.now();
      await sleep(Math.max(0, started + to * 1000 - Date.now()));
      const steps = c.stepsIn(output) - stepsBefore;
      const seconds = (Date.now() - t0) / 1000;
      const cpuPerStepUs: Record<string, number> = {};
      let total = 0;
      for (const [name, pid] of workers) {
        const a = before.get(name);
        const b = processCpuMs([pid]);
        if (a === undefined || b === undefined) continue;
        cpuPerStepUs[name] = ((b - a) * 1000) / steps;
        total += b - a;
      }
      figures.push(ended || steps <= 0 || workers.size === 0 ? undefined : { steps, perSecond: steps / seconds, cpuPerStepUs, totalPerStepUs: (total * 1000) / steps });
    }
  } finally {
    // The whole group: the launcher, its workers and its nats-server.
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // Already gone.
    }
    await exited;
    rmSync(out, { recursive: true, force: true });
  }
  return figures;
}

/** Parses `7-12,25-30` into windows; throws on anything else. */
export function parseWindows(text: string): Array<[number, number]> {
  return text.split(',').map((w) => {
    const m = /^(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)$/.exec(w.trim());
    if (!m || !(Number(m[2]) > Number(m[1]))) throw new Error(`--windows takes from-to pairs in seconds after launch, such as 7-12,25-30; got '${w}'`);
    return [Number(m[1]), Number(m[2])] as [number, number];
  });
}

async function main(): Promise<void> {
  const id = argValue('--case', '');
  const c = WINDOWED_CASES.find((w) => w.id === id);
  if (!c) throw new Error(`--case takes one of ${WINDOWED_CASES.map((w) => w.id).join(', ')}`);
  const windows = parseWindows(argValue('--windows', '7-12,25-30'));
  const pairs = Number(argValue('--pairs', '2'));
  if (!Number.isInteger(pairs) || pairs < 1) throw new Error('--pairs takes a whole number of at least 1');
  const repo = fileURLToPath(new URL('../../../../../../', import.meta.url));
  const baseline = prepareBaseline(repo, argValue('--baseline', DEFAULT_BASELINE));
  const builds: Build[] = [{ label: 'this build', root: repo }, baselineBuild(baseline)];
  const results = new Map<string, Array<Array<WindowFigures | undefined>>>(builds.map((b) => [b.label, []]));
  for (let p = 0; p < pairs; p++) {
    for (const build of builds) {
      const figures = await measureRun(c, build, windows);
      results.get(build.label)!.push(figures);
      console.log(`${c.id}, ${build.label}, run ${p + 1}/${pairs}: ${figures.map((f, i) => `${windows[i]!.join('-')} s ${f ? `${f.perSecond.toFixed(0)} steps/s, ${f.totalPerStepUs.toFixed(0)} µs CPU a step` : 'ended before it'}`).join('; ')}`);
    }
  }
  for (const [i, [from, to]] of windows.entries()) {
    console.log(`\n${c.id}, ${from}-${to} s after launch (medians over ${pairs} run(s); µs of CPU per step):`);
    const names = [...new Set([...results.values()].flatMap((runs) => runs.flatMap((r) => Object.keys(r[i]?.cpuPerStepUs ?? {}))))].sort();
    console.log(`| build | steps/s | ${names.join(' | ')} | all |`);
    console.log(`| --- | ---: | ${names.map(() => '---:').join(' | ')} | ---: |`);
    for (const [label, runs] of results) {
      const got = runs.map((r) => r[i]).filter((f): f is WindowFigures => f !== undefined);
      if (got.length === 0) {
        console.log(`| ${label} | ended before it | ${names.map(() => '').join(' | ')} | |`);
        continue;
      }
      const cell = (values: number[]) => (values.length ? median(values).toFixed(0) : '');
      console.log(`| ${label} | ${cell(got.map((f) => f.perSecond))} | ${names.map((n) => cell(got.flatMap((f) => (f.cpuPerStepUs[n] === undefined ? [] : [f.cpuPerStepUs[n]!])))).join(' | ')} | ${cell(got.map((f) => f.totalPerStepUs))} |`);
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main().catch((error: unknown) => {
    console.error((error as Error).message);
    process.exit(1);
  });
}
