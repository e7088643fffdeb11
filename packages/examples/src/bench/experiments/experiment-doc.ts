/**
 * Writes an experiment's outcome (run-experiment.ts) as a table into its
 * generated part of docs/experiments/data-plane.md: per placement and case,
 * the median of each side's block figures, the median A/B of the pairs, the
 * range of the pair ratios (the noise) and the verdict, for time per call and
 * for CPU time per call. A difference counts only when every pair ratio is on
 * the same side of 1.0.
 * @module
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from '../stats.js';
import { generatedMarkers, replaceGeneratedPart } from '../report/generated-part.js';
import type { CaseOutcome, ExperimentOutcome } from './run-experiment.js';

/** docs/experiments/data-plane.md of this repository (this file is packages/examples/dist/src/bench/experiments/experiment-doc.js). */
export const EXPERIMENTS_DOC = fileURLToPath(new URL('../../../../../../docs/experiments/data-plane.md', import.meta.url));

/** "gain", "loss" or "no difference beyond noise", from the pair ratios (A/B of time). */
export function verdict(ratios: readonly number[]): string {
  if (ratios.length === 0) return 'not measured';
  if (Math.max(...ratios) < 1) return 'gain (every pair faster with it)';
  if (Math.min(...ratios) > 1) return 'loss (every pair slower with it)';
  return 'no difference beyond noise';
}

function row(o: CaseOutcome): string {
  const f = (n: number) => (n >= 10 ? n.toFixed(1) : n >= 1 ? n.toFixed(2) : n.toFixed(3));
  const ratios = `${Math.min(...o.ratios).toFixed(2)}–${Math.max(...o.ratios).toFixed(2)}`;
  const cpuRatios = o.onCpu.map((on, i) => on / o.offCpu[i]!);
  const cpu = o.onCpu.length === 0 ? '— | — | — | not measured' : `${f(median(o.onCpu))} | ${f(median(o.offCpu))} | ${median(cpuRatios).toFixed(2)} (${Math.min(...cpuRatios).toFixed(2)}–${Math.max(...cpuRatios).toFixed(2)}) | ${verdict(cpuRatios)}`;
  return `| ${o.placement} | ${o.caseId} | ${f(median(o.on))} | ${f(median(o.off))} | ${median(o.ratios).toFixed(2)} | ${ratios} | ${verdict(o.ratios)} | ${cpu} |`;
}

/** The generated body of experiment `outcome`: setup line, table, load averages, skipped placements. */
export function renderExperiment(outcome: ExperimentOutcome): string {
  const e = outcome.experiment;
  const lines = [
    `${e.mechanism}`,
    '',
    `Run ${outcome.started.slice(0, 16).replace('T', ' ')} UTC at commit ${outcome.commit}, ${outcome.rounds} pairs of blocks per case${outcome.quick ? ' (--quick: a smoke test, not a measurement)' : ''}. A = on (${Object.keys(e.on).length === 0 ? 'default' : JSON.stringify(e.on)}), B = off (${Object.entries(e.off).map(([k, v]) => `${k}=${v}`).join(' ')}). Figures in ms (${[...new Set(outcome.outcomes.map((o) => o.unit))].join('; ')}), medians over the blocks. CPU: ms of CPU time (user + system) per call of the driver and the callee together, or per environment step of every process of the RL run (start-up included), warm-up excluded; /proc counts in 10 ms ticks.`,
    '',
    '| where | case | A (on) | B (off) | A/B (median of pairs) | A/B range of pairs | verdict (time) | CPU A | CPU B | CPU A/B (range) | verdict (CPU) |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...outcome.outcomes.map(row),
    '',
    `Load average (1, 5, 15 min) before → after: ${outcome.load.map((l) => `${l.placement} ${l.before} → ${l.after}`).join('; ')}.`,
  ];
  for (const s of outcome.skipped) lines.push('', `Not measured ${s.placement}: ${s.reason}.`);
  return lines.join('\n');
}

/**
 * Writes `outcome` into its generated part of `doc` (appending a section
 * with the markers when the doc has none for this experiment yet). Returns
 * the command whose markers were written.
 */
export function writeExperimentDoc(outcome: ExperimentOutcome, doc = EXPERIMENTS_DOC): string {
  const command = `npm run bench -- --experiment ${outcome.experiment.name}`;
  const markers = generatedMarkers(command, 'packages/examples/src/bench/experiments/');
  mkdirSync(dirname(doc), { recursive: true });
  const text = existsSync(doc) ? readFileSync(doc, 'utf8') : '# Data-plane experiments\n';
  if (!text.includes(markers.begin)) writeFileSync(doc, `${text.trimEnd()}\n\n## ${outcome.experiment.name}\n\n${markers.begin}\n${markers.end}\n`);
  const refused = replaceGeneratedPart(doc, markers, renderExperiment(outcome));
  if (refused) throw new Error(refused);
  return command;
}
