/**
 * Training, evaluation and generation with the model-parallel RNN [the
 * tutorial's `run_trainer`]: each batch runs in its own distributed autograd
 * context: forward across the parameter server and here, backward through
 * distributed autograd, one `DistributedOptimizer` step, and the context is
 * released on both workers when the callback returns.
 * @module
 */
import { tf } from '@tensorbus/core';
import type { DistributedOptimizer, RpcAgent } from '@tensorbus/actors';
import type { Batch } from './corpus.js';
import type { LstmState, RNNModel } from './model.js';

/** Mean cross-entropy of `logits` [batch, time, ntoken] against the word ids `target` [batch, time]. */
export function crossEntropy(logits: tf.Tensor, target: tf.Tensor, ntoken: number): tf.Tensor {
  return tf.tidy(() => tf.losses.softmaxCrossEntropy(tf.oneHot(tf.reshape(target, [-1]) as tf.Tensor1D, ntoken), tf.reshape(logits, [-1, ntoken])));
}

function replaceState(old: LstmState, next: LstmState): LstmState {
  tf.dispose(old);
  return next;
}

/** Trains one epoch over `batches` (the LSTM state carried from batch to batch); resolves with the mean loss. */
export async function trainEpoch(agent: RpcAgent, model: RNNModel, optimizer: DistributedOptimizer, batches: Batch[]): Promise<number> {
  let state = model.initState(batches[0]!.input.length);
  let total = 0;
  for (const batch of batches) {
    const input = tf.tensor2d(batch.input, undefined, 'int32');
    const target = tf.tensor2d(batch.target, undefined, 'int32');
    await agent.distAutograd.context(async (contextId) => {
      const { logits, state: next, intermediates } = await model.forward(input, state, true);
      const loss = crossEntropy(logits, target, model.config.ntoken);
      await agent.distAutograd.backward(contextId, [loss]);
      await optimizer.step(contextId);
      total += (await loss.data())[0]!;
      tf.dispose([logits, loss, ...intermediates]);
      state = replaceState(state, next);
    });
    tf.dispose([input, target]);
  }
  tf.dispose(state);
  return total / batches.length;
}

/** Mean cross-entropy over `batches`, without autograd [evaluate]. */
export async function evaluate(model: RNNModel, batches: Batch[]): Promise<number> {
  let state = model.initState(batches[0]!.input.length);
  let total = 0;
  let words = 0;
  for (const batch of batches) {
    const input = tf.tensor2d(batch.input, undefined, 'int32');
    const target = tf.tensor2d(batch.target, undefined, 'int32');
    const { logits, state: next, intermediates } = await model.forward(input, state);
    const loss = crossEntropy(logits, target, model.config.ntoken);
    const count = input.size;
    total += (await loss.data())[0]! * count;
    words += count;
    tf.dispose([input, target, logits, loss, ...intermediates]);
    state = replaceState(state, next);
  }
  tf.dispose(state);
  return total / words;
}

/**
 * Continues `prompt` (word ids) greedily, one most likely word at a time,
 * until the word `stop` or `maxWords` words; the model first reads `prefix`
 * (say, the end of a sentence), which is not part of the result.
 */
export async function generate(model: RNNModel, prompt: number[], stop: number, prefix: number[] = [], maxWords = 16): Promise<number[]> {
  const words = [...prompt];
  let state = model.initState(1);
  let next = [...prefix, ...prompt];
  for (let i = 0; i < maxWords; i++) {
    const input = tf.tensor2d([next], undefined, 'int32');
    const { logits, state: after, intermediates } = await model.forward(input, state);
    const best = tf.tidy(() => tf.argMax(tf.reshape(tf.slice(logits, [0, next.length - 1, 0], [1, 1, -1]), [-1])));
    const word = (await best.data())[0]!;
    tf.dispose([input, logits, best, ...intermediates]);
    state = replaceState(state, after);
    words.push(word);
    if (word === stop) break;
    next = [word];
  }
  tf.dispose(state);
  return words;
}
