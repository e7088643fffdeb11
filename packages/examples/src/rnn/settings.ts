/**
 * Command-line settings of the RNN example, the same in every process.
 * @module
 */
import { resolve } from 'node:path';
import type { OptimizerName } from '@tensorbus/actors';
import { flagReader } from '../common/args.js';

/** Settings of a run. */
export interface Settings {
  epochs: number;
  batchSize: number;
  /** Words per BPTT window. */
  bptt: number;
  /** Embedding size. */
  emsize: number;
  /** LSTM units. */
  nhid: number;
  /** Dropout rate while training. */
  dropout: number;
  optimizer: OptimizerName;
  learningRate: number;
  /** Sentences of generated text. */
  sentences: number;
  seed: number;
  out: string;
}

/** Parses `--epochs 12 --batch-size 20 ...` (each flag optional). */
export function parseSettings(argv: string[]): Settings {
  const value = flagReader(argv);
  const optimizer = value('--optimizer', 'adam') as OptimizerName;
  return {
    epochs: Number(value('--epochs', '20')),
    batchSize: Number(value('--batch-size', '20')),
    bptt: Number(value('--bptt', '12')),
    emsize: Number(value('--emsize', '32')),
    nhid: Number(value('--nhid', '64')),
    dropout: Number(value('--dropout', '0.3')),
    optimizer,
    learningRate: Number(value('--lr', optimizer === 'sgd' ? '5' : '0.01')),
    sentences: Number(value('--sentences', '1000')),
    seed: Number(value('--seed', '1')),
    out: resolve(value('--out', 'out')),
  };
}
