/**
 * What the benchmark calls on the tensorbus callee: a no-op, the identity,
 * a small value for RRefs, and a linear layer for distributed autograd.
 * Imported by the caller and the callee, so both register the same names.
 * @module
 */
import { tf } from '@tensorbus/core';
import { remoteClass, remoteFunction } from '@tensorbus/actors';

/** Does nothing: the round trip of an empty call. */
export const noop = remoteFunction('bench.noop', (): null => null);

/** Returns its argument: a tensor travels there and back. */
export const identity = remoteFunction('bench.identity', (x: tf.Tensor): tf.Tensor => x);

/** Returns its small argument: what the async calls-per-second case sends. */
export const echo = remoteFunction('bench.echo', (i: number): number => i);

/** A small tensor, the value of the RRef case (owned by the callee until released). */
export const smallValue = remoteFunction('bench.smallValue', (): tf.Tensor => tf.ones([16]));

/** A dense layer `relu(x W + b)` with seeded weights: the model of the autograd case. */
export const BenchLinear = remoteClass(
  'bench.Linear',
  class BenchLinear {
    readonly w: tf.Variable;
    readonly b: tf.Variable;
    constructor(inputs: number, outputs: number) {
      // tidy frees the initial values; variables survive it.
      this.w = tf.tidy(() => tf.variable(tf.randomNormal([inputs, outputs], 0, 0.1, 'float32', 7)));
      this.b = tf.tidy(() => tf.variable(tf.zeros([outputs])));
    }
    forward(x: tf.Tensor): tf.Tensor {
      return tf.tidy(() => tf.relu(tf.add(tf.matMul(x, this.w), this.b)));
    }
    parameters(): tf.Variable[] {
      return [this.w, this.b];
    }
  },
);

/** Tensors alive in this process: to check that a case leaks none. */
export const liveTensors = remoteFunction('bench.liveTensors', (): number => tf.memory().numTensors);
