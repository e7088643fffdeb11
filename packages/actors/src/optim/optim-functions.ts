/**
 * The owner side of {@link DistributedOptimizer}, as remote functions:
 *
 *   tb.optim.create(name, options, paramRRefs)  -> RRef<LocalOptimizer> (on the owner of the params)
 *   tb.optim.step(optimizerRRef, contextId)     -> number of variables updated
 *   tb.optim.dispose(optimizerRRef)             -> null
 * @module
 */
import { InvalidArgumentError, tf } from '@tensorbus/core';
import { currentAgent } from '../init.js';
import { remoteFunction } from '../registry/functions.js';
import { RRef } from '../rref/rref.js';
import { LocalOptimizer } from './local-optimizer.js';
import type { OptimizerOptions } from './optimizers.js';

/** Makes the optimizers of the variables `params` refer to (all owned here). */
export const createLocalOptimizer = remoteFunction(
  'tb.optim.create',
  async (name: string, options: OptimizerOptions, params: Array<RRef<tf.Variable>>): Promise<RRef<LocalOptimizer>> => {
    const agent = currentAgent();
    const variables = await Promise.all(
      params.map(async (ref, i) => {
        if (!(ref instanceof RRef) || !ref.isOwner()) throw new InvalidArgumentError(`paramRRefs[${i}] is not an RRef owned by '${agent.self.name}'`);
        const value = await ref.toHere();
        if (!(value instanceof tf.Variable)) throw new InvalidArgumentError(`paramRRefs[${i}] does not hold a tf.Variable`);
        return value;
      }),
    );
    const ref = agent.rref(new LocalOptimizer(name, options, variables));
    // Its slot variables go with the last reference (a caller that never disposes it, or whose lease ran out);
    // the parameters it updates are the model's and stay.
    ref.entry!.callsDispose = true;
    return ref;
  },
);

/** Applies the gradients of a context to the variables of an optimizer. */
export const stepLocalOptimizer = remoteFunction('tb.optim.step', async (ref: RRef<LocalOptimizer>, contextId: string): Promise<number> => {
  // Called on the optimizer's owner: toHere() is the instance itself, not a copy.
  const optimizer = (await ref.toHere()) as LocalOptimizer;
  return optimizer.step(currentAgent().distAutograd, contextId);
});

/** Disposes the state of an optimizer. */
export const disposeLocalOptimizer = remoteFunction('tb.optim.dispose', async (ref: RRef<LocalOptimizer>): Promise<null> => {
  ((await ref.toHere()) as LocalOptimizer).dispose();
  return null;
});
