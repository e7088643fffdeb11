/**
 * The part of a {@link DistributedOptimizer} that lives on one owner of
 * parameters: an optimizer per variable, applying the gradients a context
 * accumulated on this worker.
 *
 * One TensorFlow.js optimizer per variable, because `tf.train` optimizers key
 * their state (moments, accumulators) by the position of a variable in each
 * `applyGradients` call: a step that skips a variable without a gradient
 * would shift every later variable onto another's state. Per variable, state
 * and step counts are the variable's own, as in PyTorch, and a variable
 * without a gradient is left exactly as it was.
 * @module
 */
import { tf } from '@tensorbus/core';
import type { DistAutograd } from '../autograd/dist-autograd.js';
import { withoutRecording } from '../autograd/tape.js';
import { makeOptimizer, type OptimizerOptions } from './optimizers.js';

/** One owner's optimizers. */
export class LocalOptimizer {
  private readonly slots: Array<{ variable: tf.Variable; optimizer: tf.Optimizer }>;
  private disposed = false;

  constructor(readonly name: string, options: OptimizerOptions, variables: tf.Variable[]) {
    this.slots = [];
    try {
      for (const variable of variables) this.slots.push({ variable, optimizer: makeOptimizer(name, options) });
    } catch (error) {
      this.dispose();
      throw error;
    }
  }

  /** Applies the gradients of context `contextId` on this worker; returns how many variables changed. */
  step(autograd: DistAutograd, contextId: string): number {
    if (this.disposed) throw new Error(`this ${this.name} optimizer was disposed`);
    // A context that never reached this worker gave its variables no gradient.
    const grads = autograd.has(contextId) ? autograd.getGradients(contextId) : new Map<tf.Variable, tf.Tensor>();
    let updated = 0;
    withoutRecording(() => {
      for (const { variable, optimizer } of this.slots) {
        const grad = grads.get(variable);
        if (grad === undefined) continue;
        optimizer.applyGradients({ [variable.name]: grad });
        updated++;
      }
    });
    return updated;
  }

  /** Disposes the optimizers' state (the variables stay). */
  dispose(): void {
    this.disposed = true;
    for (const { optimizer } of this.slots.splice(0)) optimizer.dispose();
  }
}
