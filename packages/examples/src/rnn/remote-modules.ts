/**
 * The two halves of the RNN that live on the parameter server [the tutorial's
 * `EmbeddingTable` and `Decoder`]: modules (`forward` and `parameters`) that
 * trainers create there with `RemoteModule.create`. Both apply dropout while
 * training, as the tutorial's do.
 * @module
 */
import { tf } from '@tensorbus/core';
import { remoteClass } from '@tensorbus/actors';

/** A variable initialised with `value`, which is then disposed (tf.variable shares its buffer but leaves the tensor alive). */
function initialised(value: tf.Tensor): tf.Variable {
  const variable = tf.variable(value);
  value.dispose();
  return variable;
}

/**
 * Dropout with a seeded mask that changes with every call, so that runs are
 * reproducible (`tf.dropout` without a seed draws from Math.random).
 */
export class SeededDropout {
  private calls = 0;

  constructor(private readonly rate: number, private readonly seed: number) {}

  apply(x: tf.Tensor, training: boolean): tf.Tensor {
    if (!training || this.rate === 0) return x;
    return tf.dropout(x, this.rate, undefined, this.seed * 100_003 + ++this.calls);
  }
}

/**
 * Word ids [batch, time] (int32) to embeddings [batch, time, ninp].
 * The lookup is one-hot @ table rather than `tf.gather`: the gradient of
 * gather needs a kernel (UnsortedSegmentSum) the WASM backend lacks.
 */
export const EmbeddingTable = remoteClass(
  'rnn.EmbeddingTable',
  class EmbeddingTable {
    readonly table: tf.Variable;
    readonly drop: SeededDropout;

    constructor(readonly ntoken: number, readonly ninp: number, dropout: number, seed: number) {
      this.table = initialised(tf.randomUniform([ntoken, ninp], -0.1, 0.1, 'float32', seed));
      this.drop = new SeededDropout(dropout, seed);
    }

    forward(ids: tf.Tensor, training: boolean): tf.Tensor {
      const [batch, time] = ids.shape as [number, number];
      return tf.tidy(() => {
        const oneHot = tf.cast(tf.oneHot(tf.reshape(ids, [-1]) as tf.Tensor1D, this.ntoken), 'float32');
        return this.drop.apply(tf.reshape(tf.matMul(oneHot, this.table), [batch, time, this.ninp]), training);
      });
    }

    parameters(): tf.Variable[] {
      return [this.table];
    }

    /** Frees the table now, rather than when the module is garbage-collected. */
    dispose(): null {
      this.table.dispose();
      return null;
    }
  },
);

/** LSTM outputs [batch, time, nhid] to logits over the vocabulary [batch, time, ntoken]. */
export const Decoder = remoteClass(
  'rnn.Decoder',
  class Decoder {
    readonly weight: tf.Variable;
    readonly bias: tf.Variable;
    readonly drop: SeededDropout;

    constructor(readonly nhid: number, readonly ntoken: number, dropout: number, seed: number) {
      this.weight = initialised(tf.randomUniform([nhid, ntoken], -0.1, 0.1, 'float32', seed));
      this.bias = initialised(tf.zeros([ntoken]));
      this.drop = new SeededDropout(dropout, seed);
    }

    forward(output: tf.Tensor, training: boolean): tf.Tensor {
      const [batch, time] = output.shape as [number, number, number];
      return tf.tidy(() => {
        const flat = tf.reshape(this.drop.apply(output, training), [batch * time, this.nhid]);
        return tf.reshape(tf.add(tf.matMul(flat, this.weight), this.bias), [batch, time, this.ntoken]);
      });
    }

    parameters(): tf.Variable[] {
      return [this.weight, this.bias];
    }

    /** Frees the weights now, rather than when the module is garbage-collected. */
    dispose(): null {
      tf.dispose([this.weight, this.bias]);
      return null;
    }
  },
);
