/**
 * Distributed autograd of one worker [torch.distributed.autograd]:
 * `agent.distAutograd.context(fn)`, `backward(contextId, roots)`,
 * `getGradients(contextId)`. Contexts travel with every call made inside
 * them; backward runs across every worker involved (FAST mode); contexts are
 * released everywhere when the callback settles. See docs/dist-autograd.md.
 *
 * The parts: the contexts this worker holds (context-table.ts), the forward
 * half recorded by hooks of the call path (call-recording.ts), the backward
 * passes and their gradient messages (gradient-flow.ts), and release
 * everywhere (context-release.ts). The protocol's messages are one union
 * (`AutogradMessage`, protocol.ts) handled by {@link DistAutograd.handle}.
 * @module
 */
import { AutogradError, InvalidArgumentError, tf } from '@tensorbus/core';
import type { AgentHost, PluginLifecycle } from '../agent/host.js';
import { leaseTimer } from '../peer-limits.js';
import { randomIdPart } from '../random-id.js';
import { observeBackward } from '../observe/backward-span.js';
import { observing } from '../observe/switch.js';
import { nextTurn } from '../platform/process.js';
import { recordCalls } from './call-recording.js';
import { differentiable, isLeaf } from './context.js';
import { ContextRelease } from './context-release.js';
import { ContextTable, type ContextId } from './context-table.js';
import { GradientFlow } from './gradient-flow.js';
import { GRADS, RELEASE, type AutogradMessage } from './protocol.js';
import { recordingScope } from './tape.js';

type Tensor = tf.Tensor;

export type { ContextId } from './context-table.js';

/** Options of {@link DistAutograd.backward}. */
export interface BackwardOptions {
  /**
   * Keep the graph for another backward in the same context (gradients then
   * accumulate). Without it, a second backward from this worker rejects.
   */
  retainGraph?: boolean;
  /**
   * Time the whole pass may take across every worker, ms (0 = no limit).
   * Default: the agent's `rpcTimeoutMs`. Past it, backward rejects with
   * `RpcTimeoutError`; the gradient messages still in flight time out within
   * the same time and their tensors are freed.
   */
  timeoutMs?: number;
}

/**
 * A worker's distributed autograd, as `agent.distAutograd`.
 *
 * @example
 * ```ts
 * await agent.distAutograd.context(async (ctxId) => {
 *   const h = await agent.rpcSync('ps', embed, [x]);
 *   const loss = tf.losses.meanSquaredError(y, model(h));
 *   await agent.distAutograd.backward(ctxId, [loss]);
 *   const grads = agent.distAutograd.getGradients(ctxId); // Map<tf.Variable, tf.Tensor>
 * });
 * ```
 */
export class DistAutograd implements PluginLifecycle {
  private readonly contexts: ContextTable;
  private readonly flow: GradientFlow;
  private readonly releases: ContextRelease;
  private leaseTimer: NodeJS.Timeout | undefined;

  /** @internal Hooks into the worker's call path; installed by the autograd plugin (plugin.ts). */
  constructor(private readonly host: AgentHost) {
    this.contexts = new ContextTable(host);
    this.flow = new GradientFlow(host, this.contexts);
    this.releases = new ContextRelease(host, this.contexts);
    recordCalls(host, this.contexts);
    host.members.gone$.subscribe(({ name }) => this.contexts.dropFrom(name));
    this.leaseTimer = leaseTimer(host.options.peerLimits.leaseMs, () => this.contexts.expireLeases());
  }

  /** @internal The worker stopped: every context here is dropped. */
  stopped(): void {
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.leaseTimer = undefined;
    this.contexts.dropAll();
  }

  /**
   * Runs `fn` inside a new context [dist_autograd.context()]. Every RPC made
   * inside it (awaited or not, nested to any depth, to self too, RRef uses
   * included) belongs to the context. When `fn` settles, the context is
   * released here at once and on every worker it reached in the background
   * (as PyTorch does on context exit: the release messages are not waited
   * for; each is retried until its worker answers, leaves or fails); this
   * resolves with `fn`'s result, or rejects with its error.
   */
  async context<T>(fn: (contextId: ContextId) => T | PromiseLike<T>): Promise<T> {
    this.host.checkRunning();
    const current = this.contexts.current();
    if (current !== undefined) throw new InvalidArgumentError(`already inside autograd context ${current.id}: contexts do not nest`);
    const context = this.contexts.open(`${this.host.name}/${randomIdPart()}`);
    try {
      return await recordingScope.run(context, () => fn(context.id));
    } finally {
      // Dropped here now; the release calls go on the next turn, after the code awaiting this context has
      // sent what it does next (the next step's forward), so they fill the time spent waiting for it.
      if (this.contexts.drop(context)) nextTurn(() => void this.releases.releasePeers(context, undefined));
    }
  }

  /**
   * Runs the backward pass from `roots` across every worker involved
   * [dist_autograd.backward]. Gradients accumulate in the context of each
   * worker, never in the variables. Roots must be float32 tensors computed
   * inside the context (any shape: the pass starts from ones).
   * @throws AutogradError 'AUTOGRAD_CONTEXT_NOT_FOUND' for an unknown context,
   *   'AUTOGRAD_BACKWARD_FAILED' (naming the worker) when any worker fails.
   * @throws RpcTimeoutError when the pass takes longer than `options.timeoutMs`.
   */
  backward(contextId: ContextId, roots: Tensor[], options: BackwardOptions = {}): Promise<void> {
    // Traced (observe/): the pass is a span, and the gradients it sends are its children.
    return observing.tracing ? observeBackward(this.host.name, String(contextId), () => this.runBackward(contextId, roots, options)) : this.runBackward(contextId, roots, options);
  }

  private async runBackward(contextId: ContextId, roots: Tensor[], options: BackwardOptions): Promise<void> {
    const context = this.contexts.require(contextId);
    this.host.checkRunning();
    const timeoutMs = options.timeoutMs ?? this.host.options.rpcTimeoutMs;
    if (!Number.isFinite(timeoutMs) || timeoutMs < 0) throw new InvalidArgumentError(`backward() timeoutMs must be a non-negative number, got ${String(timeoutMs)}`);
    if (!Array.isArray(roots) || roots.length === 0) throw new InvalidArgumentError('backward() needs a non-empty array of root tensors');
    roots.forEach((root, i) => {
      if (!(root instanceof tf.Tensor)) throw new InvalidArgumentError(`roots[${i}] is not a tensor`);
      if (root.isDisposed) throw new InvalidArgumentError(`roots[${i}] is disposed`);
      if (!differentiable(root)) throw new InvalidArgumentError(`roots[${i}] has dtype '${root.dtype}': only float32 tensors have gradients`);
      if (!context.tracked.has(root.id) && !isLeaf(root)) {
        throw new InvalidArgumentError(
          `roots[${i}] was not computed in autograd context ${contextId}: compute it inside the context() callback, from variables or tensors received by RPC`,
        );
      }
    });
    if (context.graphUsed) {
      throw new AutogradError(
        'AUTOGRAD_BACKWARD_FAILED',
        `the graph of autograd context ${contextId} was already used by backward(): pass { retainGraph: true } to every backward() but the last`,
      );
    }
    await this.flow.backward(context, roots, timeoutMs);
    if (!options.retainGraph) context.graphUsed = true;
  }

  /**
   * The gradients accumulated on this worker in the context
   * [dist_autograd.get_gradients]: trainable variable -> gradient. The
   * tensors belong to the context and are disposed when it is released:
   * clone those you keep.
   * @throws AutogradError 'AUTOGRAD_CONTEXT_NOT_FOUND' for an unknown context.
   */
  getGradients(contextId: ContextId): Map<tf.Variable, Tensor> {
    return new Map(this.contexts.require(contextId).grads);
  }

  /**
   * The workers this worker's part of the context exchanged calls with
   * [_known_worker_ids]: they hold parts of it, and are told to release it.
   * @throws AutogradError 'AUTOGRAD_CONTEXT_NOT_FOUND' for an unknown context.
   */
  knownWorkers(contextId: ContextId): string[] {
    return [...this.contexts.require(contextId).known].sort();
  }

  /** True while this worker holds context `contextId`. */
  has(contextId: ContextId): boolean {
    return this.contexts.has(contextId);
  }

  /** The id of the context the running code belongs to on this worker, if any [_current_context]. */
  currentContextId(): ContextId | undefined {
    return this.contexts.current()?.id;
  }

  /** Number of contexts this worker holds now. */
  get size(): number {
    return this.contexts.size;
  }

  /**
   * @internal A protocol message from `from` (`verified`: its call's MAC
   * showed it is the member it names), the one dispatch of the protocol's
   * calls: gradients for a send of this worker, or a release.
   * @throws PermissionDeniedError when `from` may not send it (not the counterpart of the send, not a participant).
   */
  handle(message: AutogradMessage, from: string, verified: boolean): Promise<void> {
    switch (message.kind) {
      case GRADS: {
        // What is left of the backward's time, if the caller set one: the passes this causes share it.
        const { timeoutMs } = message;
        const deadline = typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs > 0 ? Date.now() + Math.min(timeoutMs, 2 ** 31 - 1) : undefined;
        return this.flow.receive(message.contextId, message.msgId, message.grads, from, verified, deadline);
      }
      case RELEASE:
        return this.releases.releaseFrom(message.contextId, from, verified);
    }
  }
}
