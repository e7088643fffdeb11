/**
 * `RemoteModule` [torch.distributed.nn.RemoteModule]: a module (an instance
 * of a `remoteClass` with `forward(...args)` and `parameters()`) created on
 * another worker and used from here. Forward calls made inside an autograd
 * context are recorded like any call; `remoteParameters()` gives RRefs that
 * {@link DistributedOptimizer} takes.
 * @module
 */
import { InvalidArgumentError, RpcFuture, type tf } from '@tensorbus/core';
import type { RemoteArgs, RpcAgent, WorkerRef } from '../agent/rpc-agent.js';
import type { Received } from '../received.js';
import type { RemoteClass } from '../registry/functions.js';
import type { RRef } from '../rref/rref.js';
import { checkModule, disposeModule, moduleParameters, type Module } from './module-functions.js';

export type { Module } from './module-functions.js';

type ForwardArgs<M extends Module> = M['forward'] extends (...args: infer A) => unknown ? A : never;
type ForwardResult<M extends Module> = Received<Awaited<ReturnType<M['forward']>>>;

/**
 * A module living on another worker.
 *
 * @example
 * ```ts
 * const emb = await RemoteModule.create(agent, 'ps', EmbeddingTable, [ntoken, dim]);
 * const h = await emb.forward(ids);
 * const opt = await DistributedOptimizer.create(agent, 'adam', await emb.remoteParameters(), { learningRate: 0.01 });
 * ```
 */
export class RemoteModule<M extends Module = Module> {
  private constructor(
    private readonly agent: RpcAgent,
    private readonly module: RRef<M>,
  ) {}

  /**
   * Constructs `new ModuleClass(...args)` on worker `to` and resolves once it
   * exists. Rejects when construction fails (RRefError 'RREF_CREATION_FAILED'
   * carrying the cause) or the instance is not a module (InvalidArgumentError).
   */
  static async create<C extends RemoteClass<never[], Module>>(
    agent: RpcAgent,
    to: WorkerRef,
    ModuleClass: C,
    args: RemoteArgs<C> | [] = [],
  ): Promise<RemoteModule<InstanceType<C>>> {
    if (typeof ModuleClass !== 'function') throw new InvalidArgumentError('ModuleClass must be a remoteClass');
    const ref = agent.remote(to, ModuleClass, args) as RRef<InstanceType<C>>;
    try {
      await agent.rpcSync(ref.ownerName(), checkModule, [ref as RRef<unknown>]);
    } catch (error) {
      await ref.release().catch(() => undefined);
      throw error;
    }
    return new RemoteModule(agent, ref);
  }

  /** Runs `forward(...args)` on the module's worker and resolves with its result. */
  forward(...args: ForwardArgs<M>): Promise<ForwardResult<M>> {
    return (this.module.rpcSync() as unknown as { forward(...a: unknown[]): Promise<unknown> }).forward(...args) as Promise<ForwardResult<M>>;
  }

  /** Runs `forward(...args)` on the module's worker, returning a future [forward_async]. */
  forwardAsync(...args: ForwardArgs<M>): RpcFuture<ForwardResult<M>> {
    return new RpcFuture(this.forward(...args));
  }

  /** RRefs to the module's parameters, owned by its worker [remote_parameters]. */
  async remoteParameters(): Promise<Array<RRef<tf.Variable>>> {
    return (await this.agent.rpcSync(this.module.ownerName(), moduleParameters, [this.module as RRef<unknown>])) as Array<RRef<tf.Variable>>;
  }

  /** The RRef of the module itself [get_module_rref]. */
  getModuleRRef(): RRef<M> {
    return this.module;
  }

  /**
   * Releases this worker's reference to the module. Its weights stay on its
   * worker (they are `tf.Variable`s: model state is freed explicitly, see
   * {@link RemoteModule.dispose}).
   */
  release(): Promise<void> {
    return this.module.release();
  }

  /**
   * Frees the module's weights on its worker (the module's own `dispose()`
   * if it has one, else each parameter), then releases this reference. Other
   * holders of the module, or of its parameters' RRefs, must not use it after.
   */
  async dispose(): Promise<void> {
    await this.agent.rpcSync(this.module.ownerName(), disposeModule, [this.module as RRef<unknown>]);
    await this.release();
  }

  /** `await using emb = await RemoteModule.create(...)` releases it at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}
