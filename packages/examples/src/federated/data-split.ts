/**
 * A label-skewed (non-IID) split of the training data across clients: each
 * client holds most of one class and a little of the others, the way the
 * data of separate organisations differs in federated learning.
 * @module
 */
import { seededRandom, shuffled } from '../common/random.js';
import type { Split } from '../parameter-server/data.js';

/**
 * Splits `train` across `clients`: of each class `c`, a share `skew` of its
 * rows goes to client `c % clients` (its home), the rest is dealt in turn to
 * the other clients. `skew = 1 / clients` is close to an IID split.
 */
export function labelSkewedSplit(train: Split, clients: number, classes: number, skew: number, seed: number): Split[] {
  const random = seededRandom(seed);
  const parts: Split[] = Array.from({ length: clients }, () => ({ features: [], labels: [] }));
  const give = (client: number, row: number) => {
    parts[client]!.features.push(train.features[row]!);
    parts[client]!.labels.push(train.labels[row]!);
  };
  for (let c = 0; c < classes; c++) {
    const rows = shuffled(train.labels.flatMap((label, i) => (label === c ? [i] : [])), random);
    const home = c % clients;
    const kept = Math.round(rows.length * skew);
    rows.slice(0, kept).forEach((row) => give(home, row));
    const others = Array.from({ length: clients }, (_, k) => k).filter((k) => k !== home);
    rows.slice(kept).forEach((row, i) => give(others.length > 0 ? others[i % others.length]! : home, row));
  }
  return parts;
}

/** How many rows of each class `split` holds. */
export function classCounts(split: Split, classes: number): number[] {
  const counts = new Array<number>(classes).fill(0);
  for (const label of split.labels) counts[label] = (counts[label] ?? 0) + 1;
  return counts;
}
