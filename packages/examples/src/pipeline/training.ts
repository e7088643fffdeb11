/**
 * One training step of the pipelined classifier, as the tutorial's loop does
 * it: inside a distributed autograd context, forward through the pipeline,
 * cross-entropy on the master, backward across both shards, and a
 * `DistributedOptimizer` step in which each shard updates its own weights.
 * Also the held-out evaluation (a forward outside any context).
 * @module
 */
import { tf } from '@tensorbus/core';
import type { DistributedOptimizer, RpcAgent } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';
import type { ImageBatch } from './data.js';
import type { PipelinedClassifier } from './pipelined-model.js';

type Tensor = TfNamespace.Tensor;

/** What one step measured. */
export interface StepResult {
  loss: number;
  /** Fraction of the batch classified correctly (before the update). */
  accuracy: number;
  /** Wall time of the whole step: forward, backward, optimizer, and the release of the autograd context. */
  seconds: number;
  /** Wall time of the forward alone (micro-batches through both shards, gathered). */
  forwardSeconds: number;
  /** Wall time of the loss and the distributed backward pass. */
  backwardSeconds: number;
  /** Wall time of the DistributedOptimizer step. */
  optimizerSeconds: number;
}

/** The batch as tensors: pixels [count, pixels per image] (int32) and labels [count]. */
function tensorsOf(batch: ImageBatch): { pixels: Tensor; labels: Tensor } {
  return {
    pixels: tf.tensor2d(batch.pixels, [batch.count, batch.pixels.length / batch.count], 'int32'),
    labels: tf.tensor1d(batch.labels, 'int32'),
  };
}

/** Fraction of rows of `logits` whose largest entry is at the label (plain JavaScript: no op is recorded). */
function accuracyOf(logits: Tensor, labels: Int32Array): number {
  const values = logits.dataSync();
  const classes = logits.shape[1]!;
  let correct = 0;
  for (let row = 0; row < labels.length; row++) {
    let best = 0;
    for (let c = 1; c < classes; c++) if (values[row * classes + c]! > values[row * classes + best]!) best = c;
    if (best === labels[row]) correct++;
  }
  return correct / labels.length;
}

function crossEntropy(logits: Tensor, labels: Tensor): Tensor {
  return tf.tidy(() => tf.losses.softmaxCrossEntropy(tf.oneHot(labels as TfNamespace.Tensor1D, logits.shape[1]!), logits));
}

/** Trains on `batch` with the batch cut into `parts` micro-batches. */
export async function trainStep(agent: RpcAgent, model: PipelinedClassifier, optimizer: DistributedOptimizer, batch: ImageBatch, parts: number): Promise<StepResult> {
  const { pixels, labels } = tensorsOf(batch);
  const started = performance.now();
  const marks: number[] = [];
  const since = (from: number) => (performance.now() - from) / 1000;
  try {
    const { loss, accuracy } = await agent.distAutograd.context(async (ctxId) => {
      const logits = await model.forward(pixels, parts);
      marks.push(performance.now());
      const lossTensor = crossEntropy(logits, labels);
      try {
        await agent.distAutograd.backward(ctxId, [lossTensor]);
        marks.push(performance.now());
        await optimizer.step(ctxId);
        marks.push(performance.now());
        return { loss: lossTensor.dataSync()[0]!, accuracy: accuracyOf(logits, batch.labels) };
      } finally {
        tf.dispose([logits, lossTensor]);
      }
    });
    const [forwardDone, backwardDone, optimizerDone] = marks as [number, number, number];
    return {
      loss,
      accuracy,
      seconds: since(started),
      forwardSeconds: (forwardDone - started) / 1000,
      backwardSeconds: (backwardDone - forwardDone) / 1000,
      optimizerSeconds: (optimizerDone - backwardDone) / 1000,
    };
  } finally {
    tf.dispose([pixels, labels]);
  }
}

/** Loss and accuracy on `batch`, without training (no autograd context). */
export async function evaluate(model: PipelinedClassifier, batch: ImageBatch, parts: number): Promise<{ loss: number; accuracy: number }> {
  const { pixels, labels } = tensorsOf(batch);
  try {
    const logits = await model.forward(pixels, parts);
    const lossTensor = crossEntropy(logits, labels);
    const result = { loss: lossTensor.dataSync()[0]!, accuracy: accuracyOf(logits, batch.labels) };
    tf.dispose([logits, lossTensor]);
    return result;
  } finally {
    tf.dispose([pixels, labels]);
  }
}
