/**
 * What the pipeline example leaves behind: `pipeline.json` (every step, and
 * the throughput of each micro-batch count) and `pipeline.svg`, two charts
 * stacked: samples per second against the number of micro-batches, and the
 * training loss and accuracy over the steps.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderChart } from '../common/svg-chart.js';
import type { StepResult } from './training.js';

/** One training step as recorded. */
export interface StepRecord extends StepResult {
  step: number;
  round: number;
  microBatches: number;
  /** False for warm-up steps, which are left out of the throughput. */
  timed: boolean;
}

/** The throughput of one micro-batch count, over its timed steps. */
export interface SettingRecord {
  microBatches: number;
  /** Samples in the largest micro-batch. */
  microBatchSize: number;
  timedBatches: number;
  /** Samples of all timed steps over their total time. */
  samplesPerSecond: number;
  /** The batch size over the median step time: what a step takes when nothing else disturbs it. */
  medianSamplesPerSecond: number;
  meanStepSeconds: number;
  medianStepSeconds: number;
  meanForwardSeconds: number;
  meanBackwardSeconds: number;
  meanOptimizerSeconds: number;
}

/** The held-out loss and accuracy after a round (one step of each micro-batch count). */
export interface RoundRecord {
  round: number;
  /** The last step of the round. */
  step: number;
  testLoss: number;
  testAccuracy: number;
}

/** Everything the run measured. */
export interface PipelineReport {
  backend: string;
  batchSize: number;
  parameters: { shard1: number; shard2: number };
  seconds: number;
  initialTest: { loss: number; accuracy: number };
  settings: SettingRecord[];
  rounds: RoundRecord[];
  steps: StepRecord[];
}

/** Writes `pipeline.json` and `pipeline.svg` into `dir`; returns their paths. */
export function writeReport(dir: string, report: PipelineReport): { json: string; svg: string } {
  mkdirSync(dir, { recursive: true });
  const json = join(dir, 'pipeline.json');
  writeFileSync(json, JSON.stringify(report, null, 2));
  const throughput = renderChart({
    title: `Pipeline over 2 shards: throughput (batch ${report.batchSize}, ${report.backend})`,
    xLabel: 'micro-batches per batch',
    yLabel: 'samples / s',
    xAxis: { categories: true },
    series: [
      { label: 'training steps (forward + backward + optimizer): all samples / all time', points: report.settings.map((s) => [s.microBatches, s.samplesPerSecond]) },
      { label: 'training steps: batch / median step time', points: report.settings.map((s) => [s.microBatches, s.medianSamplesPerSecond]) },
      { label: 'forward alone', points: report.settings.map((s) => [s.microBatches, report.batchSize / s.meanForwardSeconds]) },
      { label: 'ideal 2-stage pipeline: 2m/(m+1) x the steps at 1 micro-batch', points: ideal(report.settings) },
    ],
  });
  const learning = renderChart({
    title: 'Training on the synthetic images',
    xLabel: 'step',
    yLabel: 'cross-entropy',
    yRightLabel: 'held-out accuracy',
    xAxis: { integer: true },
    yRightAxis: { percent: true },
    series: [
      { label: 'training loss', points: report.steps.map((s) => [s.step, s.loss]) },
      { label: 'held-out accuracy', points: [[0, report.initialTest.accuracy], ...report.rounds.map((r): [number, number] => [r.step, r.testAccuracy])], right: true },
    ],
  });
  const svg = join(dir, 'pipeline.svg');
  writeFileSync(svg, stack([throughput, learning]));
  return { json, svg };
}

/**
 * What perfect pipelining of two equal stages would give, with nothing but
 * compute: m micro-batches take (m + 1) / m stage times where one batch takes
 * two (no overhead per micro-batch, no core shared).
 */
function ideal(settings: SettingRecord[]): Array<[number, number]> {
  const one = settings.find((s) => s.microBatches === 1);
  if (one === undefined) return [];
  return settings.map((s) => [s.microBatches, (one.samplesPerSecond * 2 * s.microBatches) / (s.microBatches + 1)]);
}

/** Stacks complete SVG documents of the same width vertically, in one SVG. */
function stack(charts: string[]): string {
  const size = (svg: string, attribute: string) => Number(new RegExp(`${attribute}="(\\d+)"`).exec(svg)?.[1] ?? 0);
  const width = Math.max(...charts.map((c) => size(c, 'width')));
  let y = 0;
  const parts = charts.map((chart) => {
    const placed = chart.replace('<svg ', `<svg y="${y}" `);
    y += size(chart, 'height');
    return placed;
  });
  return [`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y}">`, ...parts, '</svg>'].join('\n');
}
