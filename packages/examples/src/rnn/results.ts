/**
 * The RNN example's outputs: `rnn.json` (settings, every trainer's curve,
 * samples and memory figures) and `rnn.svg` (the loss curves).
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeChart, type Series } from '../common/svg-chart.js';
import type { TrainerReport } from './server.js';
import type { Settings } from './settings.js';

/** What the run learned and how long it took. */
export interface RunSummary {
  backend: string;
  seconds: number;
  corpus: { words: number; vocabulary: number; trainWords: number; validWords: number };
  /** The parameter server's tensors before the trainers' modules and after everything was released, and its contexts left. */
  ps: { tensorsBefore: number; tensorsAfter: number; contextsHeld: number };
}

/** Writes `rnn.json` and `rnn.svg` to `s.out`; returns their paths. */
export function writeResults(s: Settings, summary: RunSummary, reports: TrainerReport[]): { json: string; svg: string } {
  mkdirSync(s.out, { recursive: true });
  const json = join(s.out, 'rnn.json');
  const { out: _out, ...settings } = s;
  writeFileSync(json, JSON.stringify({ settings, ...summary, trainers: reports }, null, 2));
  const several = reports.length > 1;
  const series: Series[] = reports.flatMap((r) => {
    const suffix = several ? ` (${r.name})` : '';
    return [
      { label: `train loss${suffix}`, points: r.curve.flatMap((p): Array<[number, number]> => (p.trainLoss === null ? [] : [[p.epoch, p.trainLoss]])) },
      { label: `validation loss${suffix}`, points: r.curve.map((p): [number, number] => [p.epoch, p.validLoss]) },
      { label: `validation perplexity${suffix}`, points: r.curve.map((p): [number, number] => [p.epoch, p.validPerplexity]), right: true },
    ];
  });
  const svg = writeChart(join(s.out, 'rnn.svg'), {
    title: `Model-parallel RNN: embedding and decoder on 'ps', LSTM on ${several ? `${reports.length} trainers` : 'the trainer'}`,
    xLabel: 'epoch',
    yLabel: 'cross-entropy (nats per word)',
    yRightLabel: 'validation perplexity',
    xAxis: { integer: true },
    series,
  });
  return { json, svg };
}
