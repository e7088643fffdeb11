/**
 * What the workers of the XML-RPC gateway example run: `demo.LinearModel`, a
 * model held by the parameter server `ps` (constructed through the gateway,
 * used through an RRef handle), and `demo.gradient`, which a trainer runs on
 * its own shard of a synthetic regression set (y = 3·x − 2 + noise).
 * @module
 */
import { tf } from '@tensorbus/core';
import { remoteClass, remoteFunction } from '@tensorbus/actors';
import { seededRandom } from '../common/random.js';

/** Rows in each trainer's shard. */
export const SHARD_ROWS = 64;

/** The shard of trainer `index`: x in [-1, 1), y = 3x - 2 + noise, made from the index alone. */
function shard(index: number): { x: tf.Tensor1D; y: tf.Tensor1D } {
  const random = seededRandom(1000 + index);
  const x = Float32Array.from({ length: SHARD_ROWS }, () => random() * 2 - 1);
  const y = x.map((v) => 3 * v - 2 + (random() - 0.5) * 0.1);
  return { x: tf.tensor1d(x), y: tf.tensor1d(y) };
}

/**
 * The mean squared error of `w = [slope, intercept]` on shard `index`, and its
 * gradient: `{ loss, grad }` with `grad` a float32 tensor of shape [2].
 */
export const gradient = remoteFunction(
  'demo.gradient',
  (w: tf.Tensor, index: number) => {
    const { x, y } = shard(index);
    const [slope, intercept] = [w.slice([0], [1]), w.slice([1], [1])];
    const error = tf.sub(tf.add(tf.mul(x, slope), intercept), y);
    const loss = tf.mean(tf.square(error)).dataSync()[0]!;
    const grad = tf.stack([tf.mean(tf.mul(tf.mul(error, x), 2)), tf.mean(tf.mul(error, 2))]);
    return { loss, grad };
  },
  { doc: 'loss and gradient of the mean squared error of w = [slope, intercept] on shard index' },
);

/** A linear model's parameters, kept on the parameter server and updated by plain SGD. */
export const LinearModel = remoteClass(
  'demo.LinearModel',
  class {
    w = tf.variable(tf.zeros([2]));

    /** The parameters: a float32 tensor [slope, intercept]. */
    weights(): tf.Tensor {
      return this.w.clone();
    }

    /** w -= lr * grad; returns the step number. */
    apply(grad: tf.Tensor, lr: number): number {
      this.w.assign(tf.sub(this.w, tf.mul(grad, lr)));
      return ++this.steps;
    }

    steps = 0;

    dispose(): void {
      this.w.dispose();
    }
  },
);
