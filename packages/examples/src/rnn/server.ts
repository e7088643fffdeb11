/**
 * What the parameter server does besides hosting the trainers' remote
 * modules: it collects each trainer's report at the end, to write one chart.
 * @module
 */
import { remoteFunction } from '@tensorbus/actors';

/** One point of a trainer's learning curve. */
export interface EpochPoint {
  epoch: number;
  /** Mean training loss over the epoch's batches (null before training). */
  trainLoss: number | null;
  validLoss: number;
  validPerplexity: number;
  /** Seconds since training started. */
  seconds: number;
}


/** A trainer's results, sent to the parameter server at the end. */
export interface TrainerReport {
  name: string;
  curve: EpochPoint[];
  samples: Array<{ prompt: string; text: string }>;
  /** Tensors on the trainer before the model, after the first and the last epoch, and once the model was released. */
  tensors: { before: number; afterFirstEpoch: number; afterLastEpoch: number; after: number };
  /** Autograd contexts the trainer still holds once training is over. */
  contextsHeld: number;
  batchesPerEpoch: number;
  trainWords: number;
}

let collector: { expected: number; reports: TrainerReport[]; done: (reports: TrainerReport[]) => void } | undefined;

/** On the parameter server: resolves with the reports of `trainers` trainers once all arrived. */
export function collectReports(trainers: number): Promise<TrainerReport[]> {
  return new Promise((resolve) => {
    collector = { expected: trainers, reports: [], done: resolve };
  });
}

/** A trainer hands in its report. */
export const submitReport = remoteFunction('rnn.submitReport', (report: TrainerReport): null => {
  if (!collector) throw new Error('this worker collects no reports: is it the parameter server?');
  collector.reports.push(report);
  if (collector.reports.length === collector.expected) collector.done(collector.reports.sort((a, b) => a.name.localeCompare(b.name)));
  return null;
});
