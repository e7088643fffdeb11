/**
 * The two halves of the pipelined classifier [the tutorial's ResNetShard1 and
 * ResNetShard2], as modules for `RemoteModule`: each lives on its own worker,
 * holds its layers' variables, and takes its input as an RRef that it fetches
 * with `toHere()`, so activations go from shard to shard directly instead of
 * through the master. Inside an autograd context the fetch is recorded, and
 * gradients flow back along it.
 *
 * The tutorial guards each forward with a lock because PyTorch serves RPCs on
 * a thread pool; a worker here is one JavaScript thread and the forward's
 * TensorFlow.js ops run synchronously, so two forwards never interleave.
 * @module
 */
import { tf } from '@tensorbus/core';
import { remoteClass, type RRef } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';

type Tensor = TfNamespace.Tensor;
type Variable = TfNamespace.Variable;

/** Dense layers `sizes[0] -> sizes[1] -> ...`, He-uniform weights from `seed`, zero biases. */
class DenseLayers {
  readonly weights: Variable[] = [];
  readonly biases: Variable[] = [];

  constructor(sizes: number[], seed: number) {
    for (let i = 0; i + 1 < sizes.length; i++) {
      const limit = Math.sqrt(6 / sizes[i]!);
      this.weights.push(tf.variable(tf.randomUniform([sizes[i]!, sizes[i + 1]!], -limit, limit, 'float32', seed + i)));
      this.biases.push(tf.variable(tf.zeros([sizes[i + 1]!])));
    }
  }

  /** ReLU after every layer, except the last when `linearLast`. */
  apply(x: Tensor, linearLast: boolean): Tensor {
    return denseForward(this.parameters(), x, linearLast);
  }

  /** [w0, b0, w1, b1, ...]. */
  parameters(): Variable[] {
    return this.weights.flatMap((w, i) => [w, this.biases[i]!]);
  }
}

/**
 * Dense layers given as [w0, b0, w1, b1, ...]: `relu(x w + b)` per layer, the
 * last one without ReLU when `linearLast`. What both shards compute.
 */
export function denseForward(params: Tensor[], x: Tensor, linearLast: boolean): Tensor {
  let h = x;
  const layers = params.length / 2;
  for (let i = 0; i < layers; i++) {
    h = tf.add(tf.matMul(h, params[2 * i]!), params[2 * i + 1]!);
    if (!(linearLast && i === layers - 1)) h = tf.relu(h);
  }
  return h;
}

/** The input shard's scaling of 8-bit pixel values to [0, 1]. */
export function scalePixels(pixels: Tensor): Tensor {
  return tf.div(tf.cast(pixels, 'float32'), 255);
}

/** Fetches the input an RRef holds and lets go of this worker's reference to it. */
async function fetchInput(ref: RRef<Tensor>): Promise<Tensor> {
  const x = await ref.toHere();
  // The master holds its own reference until its forward is done; this fork is no longer needed.
  ref.release().catch(() => undefined);
  // Let the worker send what is ready (the previous micro-batch's output) before computing this one.
  await new Promise((resolve) => setImmediate(resolve));
  return x;
}

/**
 * The first half: 8-bit pixel values in, scaled to [0, 1], then dense layers
 * with ReLU. Pixels travel as int32, which carries no gradient, so the
 * backward pass stops here instead of computing an input gradient nobody uses.
 */
export const InputShard = remoteClass(
  'pipeline.InputShard',
  class InputShard {
    readonly layers: DenseLayers;

    /** `sizes`: [pixels per image, hidden sizes...]. */
    constructor(sizes: number[], seed: number) {
      this.layers = new DenseLayers(sizes, seed);
    }

    async forward(pixels: RRef<Tensor>): Promise<Tensor> {
      const x = await fetchInput(pixels);
      const y = tf.tidy(() => this.layers.apply(scalePixels(x), false));
      x.dispose();
      return y;
    }

    parameters(): Variable[] {
      return this.layers.parameters();
    }
  },
);

/** The second half: dense layers with ReLU, and a linear layer giving the class logits. */
export const OutputShard = remoteClass(
  'pipeline.OutputShard',
  class OutputShard {
    readonly layers: DenseLayers;

    /** `sizes`: [input features, hidden sizes..., classes]. */
    constructor(sizes: number[], seed: number) {
      this.layers = new DenseLayers(sizes, seed);
    }

    async forward(features: RRef<Tensor>): Promise<Tensor> {
      const h = await fetchInput(features);
      const logits = tf.tidy(() => this.layers.apply(h, true));
      h.dispose();
      return logits;
    }

    parameters(): Variable[] {
      return this.layers.parameters();
    }
  },
);
