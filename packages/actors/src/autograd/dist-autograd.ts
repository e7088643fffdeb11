/**
 * Distributed autograd of one worker [torch.distributed.autograd]:
 * `agent.distAutograd.context(fn)`, `backward(contextId, roots)`,
 * `getGradients(contextId)`. Contexts travel with every call made inside
 * them; backward runs across every worker involved (FAST mode); contexts are
 * released everywhere when the callback settles. See docs/dist-autograd.md.
 * @module
 */
import { AutogradError, InvalidArgumentError, PermissionDeniedError, RemoteError, RpcTimeoutError, SerializationError, tf } from '@tensorbus/core';
import type { CallMeta } from '../agent/call-context.js';
import type { AgentHost, PluginLifecycle } from '../agent/host.js';
import { isCurrentMember, isWireId, leaseTimer } from '../peer-limits.js';
import { randomIdPart } from '../random-id.js';
import { RecentSet, TOMBSTONES } from '../recent-set.js';
import { forEachTensor } from '../tensors.js';
import { localPass, type PassResult } from './backward-pass.js';
import { AutogradContext, differentiable, isLeaf, type RecvRecord } from './context.js';
import { ContextLedger } from './context-ledger.js';
import { creatorOf, GRADS, META_KEY, RELEASE, replyId, tagOf, validCarriers } from './protocol.js';
import { contextClosed, contextOpened, recordingScope, withoutRecording } from './tape.js';
import { observeBackward } from '../observe/backward-span.js';
import { observing } from '../observe/switch.js';
import { nextTurn, unrefTimer } from '../platform/process.js';

type Tensor = tf.Tensor;

/** Identifies a distributed autograd context on every worker it reaches. */
export type ContextId = string;

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

/** Longest pause between two attempts to release a context on a peer, ms. */
const RELEASE_RETRY_MAX_MS = 5_000;

/** The float tensors nested in `value` (the ones a gradient can flow through). */
function floatTensors(value: unknown): Tensor[] {
  const found: Tensor[] = [];
  forEachTensor(value, (tensor) => {
    if (differentiable(tensor)) found.push(tensor);
  });
  return found;
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
  private readonly contexts = new Map<ContextId, AutogradContext>();
  /** Ids released here: a call of theirs arriving late must not bring them back. */
  private readonly released = new RecentSet<ContextId>(TOMBSTONES);
  /** What each peer made this worker hold in contexts. */
  private readonly ledger: ContextLedger;
  private leaseTimer: NodeJS.Timeout | undefined;

  /** @internal Hooks into the worker's call path; installed by the autograd plugin (plugin.ts). */
  constructor(private readonly host: AgentHost) {
    this.ledger = new ContextLedger(host);
    host.contributeMeta((meta) => this.tagCall(meta));
    host.tapCalls((to, args, meta) => this.onRequest(to, args, meta));
    host.wrapServing((meta, run, args, caller) => this.serve(meta, run, args, caller.verified));
    host.members.gone$.subscribe(({ name }) => this.onWorkerGone(name));
    this.leaseTimer = leaseTimer(host.options.peerLimits.leaseMs, () => this.expireLeases());
  }

  /** @internal The worker stopped: every context here is dropped. */
  stopped(): void {
    this.dropAll();
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
    const current = this.current();
    if (current !== undefined) throw new InvalidArgumentError(`already inside autograd context ${current.id}: contexts do not nest`);
    const context = this.open(`${this.host.name}/${randomIdPart()}`);
    try {
      return await recordingScope.run(context, () => fn(context.id));
    } finally {
      // Dropped here now; the release calls go on the next turn, after the code awaiting this context has
      // sent what it does next (the next step's forward), so they fill the time spent waiting for it.
      if (this.drop(context)) nextTurn(() => void this.releasePeers(context, undefined));
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
    const context = this.require(contextId);
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
    const seeds = withoutRecording(() => roots.map((root): [Tensor, Tensor] => [root, tf.onesLike(root)]));
    const deadline = timeoutMs > 0 ? Date.now() + timeoutMs : undefined;
    const pass = this.pass(context, seeds, deadline).finally(() => {
      for (const [, one] of seeds) one.dispose();
    });
    if (deadline === undefined) {
      await pass;
      if (!options.retainGraph) context.graphUsed = true;
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new RpcTimeoutError(`backward of autograd context ${contextId} did not finish within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([pass, expired]);
      if (!options.retainGraph) context.graphUsed = true;
    } catch (error) {
      // A gradient message lost on the way surfaces as the call's timeout, wrapped: it is the backward's timeout.
      if (error instanceof RpcTimeoutError || (Date.now() >= deadline && isTimeout(error))) {
        pass.catch(() => undefined);
        throw error instanceof RpcTimeoutError ? error : new RpcTimeoutError(`backward of autograd context ${contextId} did not finish within ${timeoutMs} ms`, { cause: error });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The gradients accumulated on this worker in the context
   * [dist_autograd.get_gradients]: trainable variable -> gradient. The
   * tensors belong to the context and are disposed when it is released:
   * clone those you keep.
   * @throws AutogradError 'AUTOGRAD_CONTEXT_NOT_FOUND' for an unknown context.
   */
  getGradients(contextId: ContextId): Map<tf.Variable, Tensor> {
    return new Map(this.require(contextId).grads);
  }

  /**
   * The workers this worker's part of the context exchanged calls with
   * [_known_worker_ids]: they hold parts of it, and are told to release it.
   * @throws AutogradError 'AUTOGRAD_CONTEXT_NOT_FOUND' for an unknown context.
   */
  knownWorkers(contextId: ContextId): string[] {
    return [...this.require(contextId).known].sort();
  }

  /** True while this worker holds context `contextId`. */
  has(contextId: ContextId): boolean {
    return this.contexts.has(contextId);
  }

  /** The id of the context the running code belongs to on this worker, if any [_current_context]. */
  currentContextId(): ContextId | undefined {
    return this.current()?.id;
  }

  /** Number of contexts this worker holds now. */
  get size(): number {
    return this.contexts.size;
  }

  // ---- recording (hooks of the call path) -------------------------------------

  private current(): AutogradContext | undefined {
    const store = recordingScope.getStore();
    return store instanceof AutogradContext && store.home === this && store.open ? store : undefined;
  }

  /** Meta contributor: a call made inside a context carries it. */
  private tagCall(meta: CallMeta): void {
    const context = this.current();
    if (context !== undefined) meta[META_KEY] = [context.id, `${this.host.name}.${randomIdPart()}`];
  }

  /** Caller side: records the tensors sent, and those the reply brings. */
  private onRequest(to: string, args: unknown[], meta: CallMeta): ((value: unknown) => void) | undefined {
    const tag = meta[META_KEY] === undefined ? undefined : tagOf(meta);
    if (tag === undefined) return undefined;
    const context = this.contexts.get(tag[0]);
    if (context === undefined || !context.open) return undefined;
    const sent = floatTensors(args);
    context.addSend(tag[1], to, sent);
    const carriers = context.carriersAmong(sent);
    if (carriers !== undefined) meta[META_KEY] = [tag[0], tag[1], carriers];
    return (value) => {
      if (context.open) context.addRecv(to, replyId(tag[1]), floatTensors(value));
    };
  }

  /**
   * Callee side: joins the caller's context, records the tensors received and
   * those replied. A caller that did not show it is the member it names takes
   * part in no context here (it could otherwise pin or feed another's).
   */
  private serve(meta: CallMeta, run: () => Promise<unknown>, args: unknown[], verified: boolean): Promise<unknown> {
    const tag = meta[META_KEY] === undefined || !verified ? undefined : tagOf(meta);
    // In-process transports deliver in the sender's async scope: a call outside any context must not inherit one.
    if (tag === undefined) return recordingScope.getStore() === undefined ? run() : recordingScope.exit(run);
    if (!isWireId(tag[0]) || !isWireId(tag[1])) return Promise.reject(new SerializationError('malformed autograd context id in a call'));
    let context: AutogradContext | undefined;
    const received = floatTensors(args);
    const carriers = tag[2];
    if (carriers !== undefined && !validCarriers(carriers, received.length)) return Promise.reject(new SerializationError('malformed autograd gradient carriers in a call'));
    const existed = this.contexts.has(tag[0]);
    try {
      context = this.join(tag[0], meta.from);
      if (context !== undefined) this.ledger.charge(context, meta.from, received);
    } catch (error) {
      // A refused call keeps nothing: not even the context it would have opened.
      if (context !== undefined && !existed) this.drop(context);
      return Promise.reject(error);
    }
    if (context === undefined) return recordingScope.exit(run);
    context.addRecv(meta.from, tag[1], received, carriers);
    return recordingScope.run(context, run).then((result) => {
      if (context.open) context.addSend(replyId(tag[1]), meta.from, floatTensors(result));
      return result;
    });
  }

  private open(id: ContextId): AutogradContext {
    const context = new AutogradContext(id, this);
    this.contexts.set(id, context);
    contextOpened();
    return context;
  }

  /**
   * The context `id` here, created on first contact (counted against `from`),
   * unless it was already released here.
   * @throws AutogradError 'AUTOGRAD_LIMIT_EXCEEDED' when `from` holds its bound of contexts here.
   */
  private join(id: ContextId, from: string): AutogradContext | undefined {
    let context = this.contexts.get(id);
    if (context === undefined) {
      if (this.released.has(id) || !this.host.running) return undefined;
      this.ledger.admit(from);
      context = this.open(id);
      this.ledger.open(context, from);
    }
    context.known.add(from);
    context.lastUsed = Date.now();
    return context;
  }

  private require(id: ContextId): AutogradContext {
    const context = typeof id === 'string' ? this.contexts.get(id) : undefined;
    if (context === undefined) {
      throw new AutogradError(
        'AUTOGRAD_CONTEXT_NOT_FOUND',
        `worker '${this.host.name}' has no autograd context ${String(id)}: contexts are released when their context() callback settles`,
      );
    }
    return context;
  }

  // ---- backward ----------------------------------------------------------------

  /**
   * @internal Gradients arrived for the tensors of send `msgId`: runs the
   * local pass they start. Only the worker that send went to, shown by its
   * call's MAC (`verified`), may answer it: anyone else is refused and the
   * context is left as it was.
   * @throws PermissionDeniedError when `from` is not the verified counterpart of send `msgId`.
   */
  async receiveGradients(contextId: ContextId, msgId: string, grads: Array<Tensor | null>, from: string, verified: boolean, deadline?: number): Promise<void> {
    const context = this.require(contextId);
    const send = typeof msgId === 'string' ? context.sends.get(msgId) : undefined;
    if (!verified || (send === undefined ? !context.known.has(from) : send.peer !== from)) {
      throw new PermissionDeniedError(`worker '${String(from).slice(0, 64)}' may not send gradients for message ${String(msgId).slice(0, 64)} of autograd context ${contextId}: only the verified worker it was sent to may`);
    }
    context.lastUsed = Date.now();
    // A message that carried no float tensor was not recorded: nothing flows back through it.
    if (send === undefined) return;
    if (!Array.isArray(grads) || grads.length !== send.tensors.length) {
      throw new AutogradError('AUTOGRAD_BACKWARD_FAILED', `worker '${from}' sent ${String(grads?.length)} gradient(s) for message ${msgId}, which carried ${send.tensors.length} tensor(s)`);
    }
    const seeds: Array<[Tensor, Tensor]> = [];
    send.tensors.forEach((tensor, i) => {
      const grad = grads[i];
      if (grad instanceof tf.Tensor) seeds.push([tensor, grad]);
    });
    if (seeds.length > 0) {
      // A pass is synchronous. Several gradient messages often arrive in one read (one per
      // micro-batch of a pipeline): yielding first lets the gradients the previous pass sent
      // leave before this one starts, so the next worker works on them meanwhile.
      await new Promise<void>((resolve) => nextTurn(resolve));
      if (!context.open) {
        throw new AutogradError('AUTOGRAD_CONTEXT_NOT_FOUND', `autograd context ${contextId} was released during its backward pass`);
      }
      await this.pass(context, seeds, deadline);
    }
  }

  /** One local pass, then the gradients it produced for received tensors go back to their senders. */
  private async pass(context: AutogradContext, seeds: Array<[Tensor, Tensor]>, deadline?: number): Promise<void> {
    let result: PassResult;
    try {
      result = localPass(context, seeds);
    } catch (error) {
      throw this.failure(context, this.host.name, error);
    }
    for (const [variable, grad] of result.leaves) {
      if (context.open) context.accumulate(variable, grad);
      else grad.dispose();
    }
    const settled = await Promise.allSettled([...result.outgoing].map(([record, grads]) => this.sendGradients(context, record, grads, deadline)));
    for (const row of result.outgoing.values()) for (const grad of row) grad?.dispose();
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
  }

  private async sendGradients(context: AutogradContext, record: RecvRecord, grads: Array<Tensor | null>, deadline?: number): Promise<void> {
    try {
      this.host.checkLive(record.peer);
      // The receiver's own sends share what is left of the backward's time.
      const left = deadline === undefined ? undefined : Math.max(1, deadline - Date.now());
      await this.protocolCall(record.peer, GRADS, left === undefined ? [context.id, record.msgId, grads] : [context.id, record.msgId, grads, left], left);
    } catch (error) {
      throw this.failure(context, record.peer, error);
    }
  }

  /** The error of a backward that failed on `worker` (an error that already names its worker is kept). */
  private failure(context: AutogradContext, worker: string, error: unknown): AutogradError {
    if (error instanceof AutogradError && error.code === 'AUTOGRAD_BACKWARD_FAILED') return error;
    const reason =
      error instanceof RemoteError ? `${error.remoteName}: ${error.remoteMessage}` : error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return new AutogradError('AUTOGRAD_BACKWARD_FAILED', `backward of autograd context ${context.id} failed on worker '${worker}': ${reason}`, { cause: error });
  }

  /** A protocol call: made outside any context, so it is neither tagged nor recorded. */
  private protocolCall(to: string, fn: string, args: unknown[], timeoutMs?: number): Promise<unknown> {
    return recordingScope.exit(() => this.host.call(to, fn, args, timeoutMs === undefined ? {} : { timeoutMs }));
  }

  // ---- release -----------------------------------------------------------------

  /**
   * @internal `from` asked to release `contextId`: releases it here and on the
   * workers it knows. Only a participant may: a verified caller this part of
   * the context exchanged calls with. A verified member naming a context not
   * here (the release overtook the call it follows) leaves a tombstone, so the
   * late call does not open it again.
   * @throws PermissionDeniedError for an unverified caller or a worker that is not a participant; nothing changes.
   */
  async releaseFrom(contextId: ContextId, from: string, verified: boolean): Promise<void> {
    const context = this.contexts.get(contextId);
    if (!verified || (context !== undefined && !context.known.has(from))) {
      throw new PermissionDeniedError(`worker '${String(from).slice(0, 64)}' may not release autograd context ${String(contextId).slice(0, 64)}: only its verified participants may`);
    }
    if (context === undefined) {
      this.tombstone(contextId);
      return;
    }
    await this.release(context, from);
  }

  /** Drops `context` here, then asks every worker it knows but `from` to do the same, and waits for them. */
  private async release(context: AutogradContext, from: string | undefined): Promise<void> {
    if (!this.drop(context)) return;
    await this.releasePeers(context, from);
  }

  /** Asks every worker `context` knows but `from` to release it, and waits for them. */
  private async releasePeers(context: AutogradContext, from: string | undefined): Promise<void> {
    const self = this.host.name;
    const peers = [...context.known].filter((w) => w !== from && w !== self && this.host.members.departure(w) === undefined);
    if (peers.length === 0 || !this.host.running) return;
    const timeoutMs = Math.min(this.host.options.rpcTimeoutMs || 10_000, 10_000);
    await Promise.all(peers.map((w) => this.releaseOn(w, context.id, timeoutMs)));
  }

  /**
   * Asks `peer` to release `contextId`. Resolves after the first attempt; an
   * unanswered one (lost in a bus outage, a reconnect) is retried in the
   * background, backing off, until the peer answers, leaves or fails, or this
   * worker stops; for a peer that is not a member, at most its lease.
   */
  private async releaseOn(peer: string, contextId: ContextId, timeoutMs: number): Promise<void> {
    if (await this.tryRelease(peer, contextId, timeoutMs)) return;
    const giveUp = Date.now() + this.host.options.peerLimits.leaseMs;
    void (async () => {
      for (let pause = 100; ; pause = Math.min(pause * 2, RELEASE_RETRY_MAX_MS)) {
        await new Promise((resolve) => unrefTimer(setTimeout(resolve, pause)));
        if (!this.host.running || this.host.members.departure(peer) !== undefined) return;
        if (!isCurrentMember(this.host, peer) && Date.now() > giveUp) return;
        if (await this.tryRelease(peer, contextId, timeoutMs)) return;
      }
    })();
  }

  /** One release attempt; true once the peer answered (an error it answered with counts: it got the message). */
  private async tryRelease(peer: string, contextId: ContextId, timeoutMs: number): Promise<boolean> {
    try {
      await this.protocolCall(peer, RELEASE, [contextId], timeoutMs);
      return true;
    } catch (error) {
      // Silence (a timeout, nobody listening, the bus down) is retried; any answer means the peer got it.
      const code = (error as { code?: unknown }).code;
      return !isTimeout(error) && code !== 'WORKER_UNAVAILABLE' && code !== 'TRANSPORT';
    }
  }

  /** Forgets `context` here and disposes what it holds; false if it was already gone. */
  private drop(context: AutogradContext): boolean {
    if (!context.open) return false;
    this.contexts.delete(context.id);
    this.ledger.close(context);
    this.tombstone(context.id);
    context.release();
    contextClosed();
    return true;
  }

  private tombstone(id: ContextId): void {
    this.released.add(id);
  }

  /**
   * A worker left or failed: the contexts it created can never be released by
   * it, and those it opened here would be released through it.
   */
  private onWorkerGone(name: string): void {
    for (const context of [...this.contexts.values()]) if (creatorOf(context.id) === name || context.openedBy === name) this.drop(context);
  }

  /**
   * Contexts whose creator or opener is not a current member (made-up ids,
   * another account through an import) are dropped once idle for `leaseMs`.
   */
  private expireLeases(): void {
    const now = Date.now();
    for (const context of [...this.contexts.values()]) if (this.ledger.expired(context, now)) this.drop(context);
  }

  private dropAll(): void {
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.leaseTimer = undefined;
    for (const context of [...this.contexts.values()]) this.drop(context);
  }
}

/** True for a timeout, as such or wrapped (a backward failure caused by a call's timeout). */
function isTimeout(error: unknown): boolean {
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 8; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof RpcTimeoutError || (e as { code?: unknown }).code === 'RPC_TIMEOUT' || (e as { remoteCode?: unknown }).remoteCode === 'RPC_TIMEOUT') return true;
  }
  return false;
}
