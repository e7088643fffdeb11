/**
 * The application cases of the bench: whole example programs run as a user
 * runs them (`tensorbus launch`, one process per worker, an embedded
 * nats-server), each timed by what the program itself reports:
 *
 * - RL: environment steps/s of the RL example with 4 observers (from its
 *   `rl.json`: CartPole pays 1 per step, so a round's steps are its mean
 *   reward times the observers, which every build of the example writes).
 * - Parameter server: batched updates/s of the demo, unpaced, 4 trainers (the
 *   server's `epochs of N batched updates` and `after E epochs in S s`).
 * - Pipeline: samples/s with 4 micro-batches (its `micro-batches 4 ...:
 *   throughput X samples/s` line).
 *
 * The parsing reads only what the example printed or wrote in the baseline
 * build as well, so one definition measures both builds. Where this build's
 * program runs on the baseline's libraries, the baseline runs it
 * (`sameProgram`), so that a change to an example is not counted as a
 * change of the libraries.
 * @module
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One example program and how to read its rate. */
export interface AppCase {
  id: 'rl' | 'parameter-server' | 'pipeline';
  title: string;
  /** What the rate counts, per second. */
  unit: string;
  /** Worker names given to `tensorbus launch --names`. */
  names: string[];
  /** The example's entry, relative to a build's root. */
  script: string;
  /**
   * The baseline runs this build's copy of the program on its own libraries
   * (false: its own copy, where this build's needs what the baseline lacks).
   */
  sameProgram: boolean;
  /** How much training a run times (a full run's or a quick run's), as the report says it. */
  stretch(quick: boolean): string;
  /** The example's flags; `out` is a fresh folder of this run. */
  args(quick: boolean, out: string): string[];
  /** The rate from the program's stdout and its `out` folder; throws when it cannot be read. */
  rate(stdout: string, out: string): number;
}

function match(stdout: string, pattern: RegExp, what: string): RegExpExecArray {
  const found = pattern.exec(stdout);
  if (!found) throw new Error(`no ${what} in the program's output`);
  return found;
}

/**
 * How much training each case times, from its start, on every build alike.
 * A full run times a stretch a user's run spends its time in, past the first
 * seconds of every process, which are mostly its JavaScript being compiled
 * and optimized (what the short stretches timed before: docs/performance.md,
 * "eleventh pass"). Nothing is left untimed: each rate is still from the
 * start of training. A quick run keeps short stretches.
 */
export const APP_LENGTHS = {
  /** RL: seconds of training (the run stops at the first round that ends past them; see {@link rlForSeconds}). */
  rlSeconds: 20,
  /** RL in a quick run: episode rounds. */
  rlQuickEpisodes: 10,
  /** Parameter server: epochs (the example says its run time to a tenth of a second, so an epoch count of a few seconds at least). */
  psEpochs: { quick: 10, full: 540 },
  /** Pipeline: timed batches. */
  pipelineBatches: { quick: 3, full: 40 },
};

/** A quick or a full run's value of a length. */
function lengthFor(quick: boolean, length: { quick: number; full: number }): number {
  return quick ? length.quick : length.full;
}

/** The RL example's flags for a run of `seconds` of training (episodes unbounded: time alone ends it, unless it solves CartPole first). */
export function rlForSeconds(seconds: number, out: string): string[] {
  return ['--max-seconds', String(seconds), '--max-episodes', '1000000', '--out', out];
}

/** The three application cases. */
export const APP_CASES: AppCase[] = [
  {
    id: 'rl',
    title: 'RL example, 4 observers',
    unit: 'environment steps',
    names: ['agent', 'observer1', 'observer2', 'observer3', 'observer4'],
    script: 'packages/examples/dist/src/rl/main.js',
    sameProgram: true,
    stretch: (quick) => (quick ? `${APP_LENGTHS.rlQuickEpisodes} episode rounds` : `the first ${APP_LENGTHS.rlSeconds} s of training`),
    args: (quick, out) => (quick ? ['--max-episodes', String(APP_LENGTHS.rlQuickEpisodes), '--out', out] : rlForSeconds(APP_LENGTHS.rlSeconds, out)),
    rate: (_stdout, out) => {
      const summary = JSON.parse(readFileSync(join(out, 'rl.json'), 'utf8')) as { observers: number; seconds: number; curve: Array<{ meanReward: number }> };
      const steps = summary.curve.reduce((sum, c) => sum + c.meanReward, 0) * summary.observers;
      return steps / summary.seconds;
    },
  },
  {
    id: 'parameter-server',
    title: 'parameter server, 4 trainers, unpaced',
    unit: 'updates',
    names: ['ps', 'trainer1', 'trainer2', 'trainer3', 'trainer4'],
    script: 'packages/examples/dist/src/parameter-server/main.js',
    // This build's demo checkpoints the server (checkpoint.ts), which the d087f90 baseline's libraries cannot.
    sameProgram: false,
    stretch: (quick) => `${lengthFor(quick, APP_LENGTHS.psEpochs)} epochs`,
    args: (quick, out) => ['--epochs', String(lengthFor(quick, APP_LENGTHS.psEpochs)), '--out', out],
    rate: (stdout) => {
      const plan = match(stdout, /(\d+) epochs of (\d+) batched updates/, 'update count');
      const done = match(stdout, /after (\d+) epochs in ([\d.]+) s/, 'run time');
      return (Number(done[1]) * Number(plan[2])) / Number(done[2]);
    },
  },
  {
    id: 'pipeline',
    title: 'pipeline, 4 micro-batches',
    unit: 'samples',
    names: ['master', 'shard1', 'shard2'],
    script: 'packages/examples/dist/src/pipeline/main.js',
    sameProgram: true,
    stretch: (quick) => `${lengthFor(quick, APP_LENGTHS.pipelineBatches)} batches`,
    args: (quick, out) => ['--splits', '4', '--batches', String(lengthFor(quick, APP_LENGTHS.pipelineBatches)), '--warmup', '1', '--out', out],
    rate: (stdout) => Number(match(stdout, /micro-batches 4 \(of \d+ samples\): throughput ([\d.]+) samples\/s/, 'throughput')[1]),
  },
];

/** The application case `id` (every id of `AppCase['id']` has one). */
export function appCase(id: AppCase['id']): AppCase {
  const found = APP_CASES.find((c) => c.id === id);
  if (found === undefined) throw new Error(`no application case '${id}'`);
  return found;
}
