/**
 * `npm run bench -- --experiment <name> [--rounds N] [--quick] [--no-doc]`:
 * one data-plane A/B experiment (experiment-list.ts), its table printed and
 * written into its generated part of docs/experiments/data-plane.md (unless
 * `--no-doc` or `--quick`). `--experiment list` prints the experiments.
 * @module
 */
import { EXPERIMENTS, experimentNamed } from './experiment-list.js';
import { renderExperiment, writeExperimentDoc, EXPERIMENTS_DOC } from './experiment-doc.js';
import { runExperiment } from './run-experiment.js';

/** Pairs of blocks per case unless `--rounds` says otherwise. */
export const DEFAULT_ROUNDS = 6;

/** Runs the experiment the flags name (see the module). */
export async function experimentCommand(argv: string[]): Promise<void> {
  const name = argv[argv.indexOf('--experiment') + 1];
  if (name === undefined || name.startsWith('--') || name === 'list') {
    for (const e of EXPERIMENTS) console.log(`${e.name.padEnd(16)} ${e.placements.join(', ')}: ${e.cases.map((c) => c.id).join(', ')}\n${' '.repeat(17)}${e.mechanism}`);
    if (name !== 'list') throw new Error('--experiment needs a name (above)');
    return;
  }
  const experiment = experimentNamed(name);
  const r = argv.indexOf('--rounds');
  const rounds = r >= 0 ? Number(argv[r + 1]) : DEFAULT_ROUNDS;
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds needs a whole number of pairs, at least 1');
  const quick = argv.includes('--quick');
  const outcome = await runExperiment(experiment, { rounds, quick });
  console.log(`\n${renderExperiment(outcome)}\n`);
  if (argv.includes('--no-doc') || quick) {
    console.log(`${EXPERIMENTS_DOC} left unchanged (${quick ? '--quick' : '--no-doc'})`);
    return;
  }
  writeExperimentDoc(outcome);
  console.log(`${EXPERIMENTS_DOC}: the part of experiment ${name} rewritten from this run`);
}
