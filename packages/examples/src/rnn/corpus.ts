/**
 * The corpus as a word language model sees it [PyTorch's word_language_model
 * `data.py` and `batchify`/`get_batch`]: a vocabulary, the text as word ids
 * split into training and validation parts, and the batches of truncated
 * backpropagation through time.
 * @module
 */
import { generateCorpus } from './grammar.js';

/** Words and their ids, and the text as ids. */
export interface Corpus {
  /** The vocabulary, sorted; a word's id is its index. */
  vocab: string[];
  /** Training text (about 90 % of the sentences). */
  train: number[];
  /** Validation text (the remaining sentences). */
  valid: number[];
}

/** One step of truncated BPTT: `target[b][t]` is the word after `input[b][t]`. */
export interface Batch {
  input: number[][];
  target: number[][];
}

/** Generates `sentences` sentences with `seed` and splits off the last 10 % for validation. */
export function loadCorpus(sentences = 500, seed = 2020): Corpus {
  const words = generateCorpus(sentences, seed);
  const vocab = [...new Set(words)].sort();
  const ids = new Map(vocab.map((w, i) => [w, i]));
  // Split at the sentence end closest to 90 % of the words.
  let split = Math.floor(words.length * 0.9);
  while (split < words.length && words[split - 1] !== '.') split++;
  const encoded = words.map((w) => ids.get(w)!);
  return { vocab, train: encoded.slice(0, split), valid: encoded.slice(split) };
}

/** Word ids of `text` (words separated by spaces); throws on a word not in `vocab`. */
export function encode(vocab: string[], text: string): number[] {
  return text
    .trim()
    .split(/\s+/)
    .map((word) => {
      const id = vocab.indexOf(word);
      if (id < 0) throw new Error(`'${word}' is not in the vocabulary`);
      return id;
    });
}

/** Part `k` of `n` contiguous parts of `ids` (one per trainer). */
export function shard(ids: number[], k: number, n: number): number[] {
  const size = Math.floor(ids.length / n);
  return ids.slice(k * size, (k + 1) * size);
}

/**
 * Cuts `ids` into `batchSize` contiguous streams of equal length, dropping the
 * remainder [batchify]. Stream `b` continues from one batch to the next, so
 * the LSTM's state can be carried over.
 */
export function batchify(ids: number[], batchSize: number): number[][] {
  const length = Math.floor(ids.length / batchSize);
  if (length < 2) throw new Error(`${ids.length} words are too few for batches of ${batchSize}`);
  return Array.from({ length: batchSize }, (_, b) => ids.slice(b * length, (b + 1) * length));
}

/** The successive windows of `seqLen` words of `streams`, with their next words [get_batch]. */
export function bpttBatches(streams: number[][], seqLen: number): Batch[] {
  const length = streams[0]!.length;
  const batches: Batch[] = [];
  for (let start = 0; start < length - 1; start += seqLen) {
    const end = Math.min(start + seqLen, length - 1);
    batches.push({
      input: streams.map((s) => s.slice(start, end)),
      target: streams.map((s) => s.slice(start + 1, end + 1)),
    });
  }
  return batches;
}
