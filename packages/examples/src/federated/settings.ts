/**
 * Command-line settings of the federated example, shared by `main.js` and the
 * worker processes it starts (they get the same arguments).
 * @module
 */
import { resolve } from 'node:path';
import { flagReader } from '../common/args.js';

/** What one run does. */
export interface Settings {
  /** Rounds of federated averaging. */
  rounds: number;
  /** A round closes at this deadline (ms after it opened) with whoever submitted. */
  deadlineMs: number;
  /** Local epochs each client trains per round. */
  localEpochs: number;
  batchSize: number;
  learningRate: number;
  /** Share of each class given to its "home" client (label skew); 1/3 is IID for 3 clients. */
  skew: number;
  /** Rounds a client sits out silently: client name -> rounds. */
  skip: Map<string, Set<number>>;
  /** The round at which a client kills itself (SIGKILL) before submitting: client name -> round. */
  crash: Map<string, number>;
  seed: number;
  out: string;
}

function schedule(text: string): Array<[string, number]> {
  if (!text) return [];
  return text.split(',').map((item) => {
    const [name, round] = item.split(':');
    const n = Number(round);
    if (!name || !Number.isInteger(n) || n < 1) throw new Error(`expected <client>:<round>, got '${item}'`);
    return [name, n];
  });
}

/** Parses `--rounds 30 --deadline-ms 4000 --skip client2:10 --crash client3:20 --out out ...`. */
export function parseSettings(argv: string[]): Settings {
  const value = flagReader(argv);
  const skip = new Map<string, Set<number>>();
  for (const [name, round] of schedule(value('--skip', ''))) {
    if (!skip.has(name)) skip.set(name, new Set());
    skip.get(name)!.add(round);
  }
  return {
    rounds: Number(value('--rounds', '30')),
    deadlineMs: Number(value('--deadline-ms', '4000')),
    localEpochs: Number(value('--local-epochs', '2')),
    batchSize: Number(value('--batch-size', '8')),
    learningRate: Number(value('--lr', '0.1')),
    skew: Number(value('--skew', '0.8')),
    skip,
    crash: new Map(schedule(value('--crash', ''))),
    seed: Number(value('--seed', '1')),
    out: resolve(value('--out', 'out')),
  };
}
