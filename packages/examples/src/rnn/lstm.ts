/**
 * A one-layer LSTM as plain TensorFlow.js ops [torch.nn.LSTM]: the part of
 * the model that runs on the trainer. Written out rather than taken from
 * `tf.layers.lstm` so that its parameters are exactly three variables and it
 * leaves no tensor behind (building a `tf.layers` LSTM leaves its initial
 * values alive).
 * @module
 */
import { tf } from '@tensorbus/core';

/** The LSTM's state [h, c], each [batch, nhid]. */
export type LstmState = [tf.Tensor, tf.Tensor];

/** y = LSTM(x) with gates in PyTorch's order: input, forget, cell, output. */
export class Lstm {
  /** [ninp, 4 nhid] [weight_ih_l0, transposed]. */
  readonly inputKernel: tf.Variable;
  /** [nhid, 4 nhid] [weight_hh_l0, transposed]. */
  readonly recurrentKernel: tf.Variable;
  /** [4 nhid]: zero, except 1 for the forget gate, so that the state is kept at first. */
  readonly bias: tf.Variable;

  constructor(readonly ninp: number, readonly nhid: number, seed: number) {
    // PyTorch's initialisation: uniform in ±1/sqrt(nhid).
    const k = 1 / Math.sqrt(nhid);
    this.inputKernel = tf.tidy(() => tf.variable(tf.randomUniform([ninp, 4 * nhid], -k, k, 'float32', seed)));
    this.recurrentKernel = tf.tidy(() => tf.variable(tf.randomUniform([nhid, 4 * nhid], -k, k, 'float32', seed + 1)));
    this.bias = tf.tidy(() => tf.variable(tf.concat([tf.zeros([nhid]), tf.ones([nhid]), tf.zeros([2 * nhid])])));
  }

  /** The trainable variables. */
  parameters(): tf.Variable[] {
    return [this.inputKernel, this.recurrentKernel, this.bias];
  }

  /** A zero state for `batch` sequences. */
  zeroState(batch: number): LstmState {
    return [tf.zeros([batch, this.nhid]), tf.zeros([batch, this.nhid])];
  }

  /**
   * Runs over `x` [batch, time, ninp] from `state`; returns the outputs
   * [batch, time, nhid] and the state after the last step (`state` stays the
   * caller's).
   */
  apply(x: tf.Tensor, state: LstmState): { output: tf.Tensor; state: LstmState } {
    const [batch, time] = x.shape as [number, number, number];
    const { nhid } = this;
    return tf.tidy(() => {
      // The input's share of every step's gates, in one product.
      const projected = tf.reshape(tf.add(tf.matMul(tf.reshape(x, [batch * time, this.ninp]), this.inputKernel), this.bias), [batch, time, 4 * nhid]);
      let [h, c] = state;
      const outputs: tf.Tensor[] = [];
      for (const gates of tf.unstack(projected, 1)) {
        const [i, f, g, o] = tf.split(tf.add(gates, tf.matMul(h, this.recurrentKernel)), 4, 1) as [tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor];
        c = tf.add(tf.mul(tf.sigmoid(f), c), tf.mul(tf.sigmoid(i), tf.tanh(g)));
        h = tf.mul(tf.sigmoid(o), tf.tanh(c));
        outputs.push(h);
      }
      return { output: tf.stack(outputs, 1), state: [h, c] as LstmState };
    });
  }

  /** Disposes the variables. */
  dispose(): void {
    tf.dispose(this.parameters());
  }
}
