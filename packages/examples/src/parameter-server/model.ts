/**
 * A small classifier (4 -> 16 -> 3 with ReLU) as plain tensors, so the same
 * function runs on the server's variables and on the trainers' copies.
 * @module
 */
import { tf } from '@tensorbus/core';
import type * as TfNamespace from '@tensorflow/tfjs';

type Tensor = TfNamespace.Tensor;

/** Weights in order: w1 [4,16], b1 [16], w2 [16,3], b2 [3]. */
export type Params = Tensor[];

/** Variables of a freshly initialised model (Glorot-uniform weights, zero biases). */
export function createParams(inputs: number, hidden: number, classes: number, seed = 1): TfNamespace.Variable[] {
  // tidy disposes the initial values; the variables hold their own references to the data.
  return tf.tidy(() => [
    tf.variable(tf.randomUniform([inputs, hidden], -Math.sqrt(6 / (inputs + hidden)), Math.sqrt(6 / (inputs + hidden)), 'float32', seed), true, 'w1'),
    tf.variable(tf.zeros([hidden]), true, 'b1'),
    tf.variable(tf.randomUniform([hidden, classes], -Math.sqrt(6 / (hidden + classes)), Math.sqrt(6 / (hidden + classes)), 'float32', seed + 1), true, 'w2'),
    tf.variable(tf.zeros([classes]), true, 'b2'),
  ]);
}

/** Logits of `x` [n, 4]. */
export function logits(params: Params, x: Tensor): Tensor {
  const [w1, b1, w2, b2] = params as [Tensor, Tensor, Tensor, Tensor];
  return tf.add(tf.matMul(tf.relu(tf.add(tf.matMul(x, w1), b1)), w2), b2);
}

/** Mean softmax cross-entropy of `x` against integer `labels`. */
export function loss(params: Params, x: Tensor, labels: Tensor): Tensor {
  return tf.losses.softmaxCrossEntropy(tf.oneHot(labels as TfNamespace.Tensor1D, 3), logits(params, x));
}

/** Gradients of the loss with respect to each parameter. */
export function gradients(params: Params, x: Tensor, labels: Tensor): Tensor[] {
  return tf.tidy(() => tf.grads((...p: Tensor[]) => loss(p, x, labels))(params));
}

/** Fraction of rows classified correctly, and the mean loss. */
export function evaluate(params: Params, features: number[][], labels: number[]): { accuracy: number; loss: number } {
  return tf.tidy(() => {
    const x = tf.tensor2d(features);
    const y = tf.tensor1d(labels, 'int32');
    const predicted = tf.argMax(logits(params, x), 1);
    const accuracy = tf.mean(tf.cast(tf.equal(predicted, y), 'float32')).dataSync()[0]!;
    return { accuracy, loss: loss(params, x, y).dataSync()[0]! };
  });
}
