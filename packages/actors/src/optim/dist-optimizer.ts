/**
 * `DistributedOptimizer` [torch.distributed.optim.DistributedOptimizer]: an
 * optimizer over parameters spread across workers. Each owner of parameters
 * gets its own optimizer; `step(contextId)` has every owner apply the
 * gradients that context accumulated on it, concurrently.
 * @module
 */
import { InvalidArgumentError, type tf } from '@tensorbus/core';
import { hostOf, type RpcAgent } from '../agent/rpc-agent.js';
import { recordingScope } from '../autograd/tape.js';
import { RRef } from '../rref/rref.js';
import type { LocalOptimizer } from './local-optimizer.js';
import { createLocalOptimizer, disposeLocalOptimizer, stepLocalOptimizer } from './optim-functions.js';
import { checkOptimizer, type OptimizerName, type OptimizerOptions } from './optimizers.js';

interface Part {
  owner: string;
  ref: RRef<LocalOptimizer>;
}

/**
 * An optimizer over remote parameters.
 *
 * @example
 * ```ts
 * const opt = await DistributedOptimizer.create(agent, 'sgd', await emb.remoteParameters(), { learningRate: 0.05 });
 * await agent.distAutograd.context(async (ctxId) => {
 *   const loss = lossOf(await emb.forward(x));
 *   await agent.distAutograd.backward(ctxId, [loss]);
 *   await opt.step(ctxId);
 * });
 * ```
 */
export class DistributedOptimizer {
  private disposed = false;

  private constructor(
    private readonly agent: RpcAgent,
    /** The optimizer's name ('sgd', 'adam', …). */
    readonly name: OptimizerName,
    private readonly parts: Part[],
  ) {}

  /**
   * Makes an optimizer named `name` (with `tf.train.*`'s options) for the
   * variables `paramRRefs` refer to, on their owners. Rejects when the name
   * or options are bad, an RRef does not hold a variable, or an owner fails.
   */
  static async create(agent: RpcAgent, name: OptimizerName, paramRRefs: Array<RRef<tf.Variable>>, options: OptimizerOptions = {}): Promise<DistributedOptimizer> {
    hostOf(agent).checkRunning();
    checkOptimizer(name, options);
    if (!Array.isArray(paramRRefs)) throw new InvalidArgumentError('paramRRefs must be an array of RRefs to tf.Variables');
    const byOwner = new Map<string, Array<RRef<tf.Variable>>>();
    paramRRefs.forEach((ref, i) => {
      if (!(ref instanceof RRef)) throw new InvalidArgumentError(`paramRRefs[${i}] is not an RRef`);
      const list = byOwner.get(ref.ownerName()) ?? [];
      list.push(ref);
      byOwner.set(ref.ownerName(), list);
    });
    const settled = await Promise.allSettled(
      [...byOwner].map(async ([owner, refs]): Promise<Part> => ({ owner, ref: (await outside(() => agent.rpcSync(owner, createLocalOptimizer, [name, options, refs]))) as RRef<LocalOptimizer> })),
    );
    const parts = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) {
      await Promise.all(parts.map((part) => part.ref.release().catch(() => undefined)));
      throw failed.reason;
    }
    return new DistributedOptimizer(agent, name, parts);
  }

  /**
   * Has each owner apply the gradients context `contextId` accumulated on it
   * [DistributedOptimizer.step]. Variables without a gradient are unchanged.
   * @throws AutogradError 'AUTOGRAD_CONTEXT_NOT_FOUND' when this worker has no such context.
   */
  async step(contextId: string): Promise<void> {
    if (this.disposed) throw new InvalidArgumentError('this DistributedOptimizer was disposed');
    this.agent.distAutograd.getGradients(contextId);
    await Promise.all(this.parts.map((part) => outside(() => this.agent.rpcSync(part.owner, stepLocalOptimizer, [part.ref, contextId]))));
  }

  /** Drops the optimizers' state on every owner (the variables stay). Idempotent. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    await Promise.all(
      this.parts.map(async (part) => {
        await outside(() => this.agent.rpcSync(part.owner, disposeLocalOptimizer, [part.ref])).catch(() => undefined);
        await part.ref.release().catch(() => undefined);
      }),
    );
  }

  /** `await using opt = await DistributedOptimizer.create(...)` disposes it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}

/** Optimizer calls are made outside any autograd context: they are not part of the graph. */
function outside<T>(call: () => Promise<T>): Promise<T> {
  return recordingScope.exit(call);
}
