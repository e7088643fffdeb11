/**
 * `RRef<T>`: a reference to a value that lives on its owner worker
 * [torch.distributed.rpc.RRef]. Owner handles hold the value; user handles
 * are forks that keep it alive on the owner until released.
 * @module
 */
import { RpcFuture, RRefError, type TensorbusError } from '@tensorbus/core';
import type { CallOptions, WireContext } from '../agent/host.js';
import { ARRIVES_AS_ITSELF, type ArrivesAsItself, type Received } from '../received.js';
import type { WorkerInfo } from '../worker-info.js';
import type { OwnerEntry } from './owner-table.js';
import type { RRefWire } from './rref-protocol.js';
import type { Supervision } from './rref-protocol.js';

/** The async version of T's methods (what `rref.rpcSync()` exposes), resolving to what their results arrive as. */
export type SyncProxy<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Received<Awaited<R>>> : never;
};

/** T's methods returning futures (what `rref.rpcAsync()` exposes) of what their results arrive as. */
export type AsyncProxy<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => RpcFuture<Received<Awaited<R>>> : never;
};

/** T's methods returning RRefs to their results, on the same owner (what `rref.remote()` exposes). */
export type RemoteProxy<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => RRef<Awaited<R>> : never;
};

/** Counts of `agent.rrefStats()`. */
export interface RRefStats {
  /** Values owned here. */
  owners: number;
  /** User forks held here. */
  users: number;
  /** Forks this owner sent that their holders have not confirmed yet. */
  pendingUsers: number;
  /** Forks users here sent on that the owner has not confirmed yet. */
  pendingChildren: number;
}

/** A user fork of a value owned elsewhere, as this worker tracks it. */
export interface UserState {
  rrefId: string;
  owner: string;
  forkId: string;
  /** The owner acknowledged this fork. */
  confirmed: boolean;
  /** Settles when the owner acknowledged (or refused) this fork. */
  confirmation: Promise<void>;
  /** Why this RRef cannot be used (creation failed, owner lost). */
  failure: TensorbusError | undefined;
  released: boolean;
  /**
   * This worker's own `remote()` is creating the value and its creation call
   * is already on its way: a use may follow it at once (the owner waits for a
   * value still being made), instead of waiting for the reply first.
   */
  creating?: boolean;
  /**
   * Set from `remote()` until the end of the code that called it (the
   * creation call goes out in a microtask): a `toHere()` made meanwhile asks
   * the creation to bring the value back with its reply.
   */
  launch?: CreationLaunch;
  /** The delete of this fork, once under way (the last handle was released): shutdown waits for it. */
  deleting?: Promise<void>;
  /** Set on the creator's fork of a supervised object (supervised.ts). */
  supervision?: Supervision;
  /** Forks this worker sent on, not yet confirmed by their holders: forkId -> holder. */
  pendingChildren: Map<string, string>;
  /** RRef objects (handles) on this fork not released yet: the fork goes with the last. */
  handles: number;
}

/** A creation call about to be sent, and what a `toHere()` made before it went asked of it. */
export interface CreationLaunch {
  /** The creation's reply is to carry the value. */
  wantsValue: boolean;
  /** Nobody waits for the value any more (its toHere() timed out): it is disposed when it comes. */
  abandoned: boolean;
  /** The creation call's result: the value when `wantsValue`, else null. */
  result: Promise<unknown>;
  /** Sends the creation now (once; later calls do nothing). */
  go(): void;
}

/** One RRef object's own state, shared with the finalizer (which must not hold the RRef). */
export interface HandleState {
  /** This handle was released (by `release()`, the end of a call, or the garbage collector). */
  released: boolean;
  /** The code holding this handle keeps it past the call that gave it (`keep()` / `fork()`). */
  kept: boolean;
}

/** What an RRef asks of its worker's RRef manager. */
export interface RRefHost {
  readonly selfName: string;
  workerInfo(name: string): WorkerInfo;
  fetch(rref: RRef<unknown>, options: CallOptions): Promise<unknown>;
  callMethod(rref: RRef<unknown>, method: string, args: unknown[], options: CallOptions): Promise<unknown>;
  remoteMethod(rref: RRef<unknown>, method: string, args: unknown[], options: CallOptions): RRef<unknown>;
  release(rref: RRef<unknown>): Promise<void>;
  fork(rref: RRef<unknown>): RRef<unknown>;
  /** Resolves once an owner handle's value exists, within the options' timeout; rejects with its creation failure. */
  waitReady(rref: RRef<unknown>, options: CallOptions): Promise<void>;
  backward(rref: RRef<unknown>, contextId: string | undefined, retainGraph: boolean): Promise<void>;
  /** Encodes `rref` for the message `context` describes, registering the fork it becomes. */
  write(rref: RRef<unknown>, context: WireContext | undefined): RRefWire;
}

const NOT_METHODS = new Set<PropertyKey>(['then', 'catch', 'finally', 'toJSON', 'constructor']);

function proxy<P>(make: (method: string) => (...args: unknown[]) => unknown): P {
  return new Proxy({}, {
    get: (_, key) => (typeof key === 'symbol' || NOT_METHODS.has(key) ? undefined : make(key)),
  }) as P;
}

/**
 * A remote reference. Made by `agent.remote(...)` (user handle, or owner
 * handle when the callee is this worker) and `agent.rref(value)` (owner
 * handle), or received in arguments and results.
 *
 * Lifetimes follow calls, not the garbage collector: an RRef received in a
 * call's arguments is released when the call settles, and one returned in a
 * call's result is released on the callee once sent, unless kept
 * ({@link RRef.keep}, {@link RRef.fork}); your own RRefs are released with
 * `release()` or `await using`. A function runs only once the RRefs among
 * its arguments are usable (see docs/rref.md).
 *
 * @example
 * ```ts
 * await using counter = agent.remote('ps', Counter, []);
 * await counter.rpcSync().inc(5);
 * const n = await counter.rpcSync().inc(1);   // 6
 * ```
 */
export class RRef<T = unknown> implements ArrivesAsItself {
  /** An RRef arrives as an RRef (see `Received`); on the prototype, not on every handle. */
  get [ARRIVES_AS_ITSELF](): true {
    return true;
  }

  /** @internal */
  constructor(
    /** @internal */ readonly manager: RRefHost,
    /** @internal */ readonly rrefId: string,
    private readonly ownerWorker: string,
    /** @internal */ readonly user: UserState | undefined,
    /** @internal */ readonly entry: OwnerEntry | undefined,
  ) {}

  /** @internal This handle's release and keep flags, shared with the finalizer (which must not hold the RRef). */
  readonly handle: HandleState = { released: false, kept: false };

  /** The owner worker [RRef.owner()]. */
  owner(): WorkerInfo {
    return this.manager.workerInfo(this.ownerWorker);
  }

  /** The owner's name [RRef.owner_name()]. */
  ownerName(): string {
    return this.ownerWorker;
  }

  /** True on the owner [RRef.is_owner()]. */
  isOwner(): boolean {
    return this.entry !== undefined;
  }

  /** True once the owner knows of this reference [RRef.confirmed_by_owner()]. */
  confirmedByOwner(): boolean {
    return this.entry !== undefined || this.user!.confirmed;
  }

  /**
   * The value itself; owner only [RRef.local_value()].
   * @throws RRefError 'RREF_NOT_OWNER' on a user, 'RREF_RELEASED' after release,
   *   'RREF_CREATION_FAILED' when making the value failed.
   */
  localValue(): T {
    if (!this.entry) throw new RRefError('RREF_NOT_OWNER', `localValue() on a user RRef: the value lives on '${this.ownerWorker}'; use toHere()`);
    this.checkUsable();
    if (this.entry.failure !== undefined) throw creationFailed(this.rrefId, this.entry.failure);
    if (!this.entry.created) throw new RRefError('RREF_CREATION_FAILED', `RRef ${this.rrefId} is still being created: await toHere() instead`);
    return this.entry.value as T;
  }

  /**
   * A copy of the value here [RRef.to_here()], typed as what arrives over the
   * wire (a class instance as its data fields, a tf.Variable as a tensor); on
   * the owner, the value itself (which has at least that). `timeoutMs` bounds
   * the whole wait, the value's creation included: past it, RpcTimeoutError.
   */
  async toHere(options: CallOptions = {}): Promise<Received<T>> {
    this.checkUsable();
    if (this.entry) {
      await this.manager.waitReady(this as RRef<unknown>, options);
      return this.entry.value as Received<T>;
    }
    return this.manager.fetch(this as RRef<unknown>, options) as Promise<Received<T>>;
  }

  /**
   * Runs the value's methods on the owner and waits for their results
   * [RRef.rpc_sync()]. A released or failed RRef rejects at the call.
   */
  rpcSync(options: CallOptions = {}): SyncProxy<T> {
    return proxy<SyncProxy<T>>((method) => (...args) => this.manager.callMethod(this as RRef<unknown>, method, args, options));
  }

  /** Runs the value's methods on the owner, returning futures [RRef.rpc_async()]. */
  rpcAsync(options: CallOptions = {}): AsyncProxy<T> {
    return proxy<AsyncProxy<T>>((method) => (...args) => new RpcFuture(this.manager.callMethod(this as RRef<unknown>, method, args, options)));
  }

  /** Runs the value's methods on the owner, keeping their results there [RRef.remote()]. */
  remote(options: CallOptions = {}): RemoteProxy<T> {
    return proxy<RemoteProxy<T>>((method) => (...args) => this.manager.remoteMethod(this as RRef<unknown>, method, args, options));
  }

  /**
   * Keeps this RRef past the end of the call that gave it to this worker, and
   * returns it. An RRef that arrives in a call's arguments is released when
   * the call settles, and one returned in a call's result is released on the
   * callee once the result is sent (it belongs to the caller then); a function
   * that stores an RRef it received, or returns one it also keeps, calls
   * `keep()` and later `release()` [Cap'n Web's `dup()` for stubs passed as
   * parameters]. Does nothing to the owner: no message is sent.
   * @throws RRefError 'RREF_RELEASED' when this handle was already released.
   *
   * @example
   * ```ts
   * const register = remoteFunction('ps.register', (worker: RRef<Worker>) => {
   *   registered.push(worker.keep());   // still usable after register() returned
   * });
   * ```
   */
  keep(): this {
    // A failed RRef may be kept too (its release still tells the owner); a released one is gone.
    if (this.released) throw new RRefError('RREF_RELEASED', `RRef ${this.rrefId} was released`);
    this.handle.kept = true;
    return this;
  }

  /**
   * A new handle on the same value, kept by whoever holds it (see
   * {@link RRef.keep}): this one can still be released (or be released at the
   * end of the call) without affecting it. The value stays until every
   * handle is released. Local: no message is sent.
   * @throws RRefError 'RREF_RELEASED' after release, or why this RRef cannot be used.
   */
  fork(): RRef<T> {
    this.checkUsable();
    return this.manager.fork(this as RRef<unknown>) as RRef<T>;
  }

  /** True once `keep()` was called on this handle, or it was made by `fork()`. */
  get kept(): boolean {
    return this.handle.kept;
  }

  /**
   * Runs the distributed backward pass from this RRef's value, a scalar
   * float32 tensor, on its owner [RRef.backward]: gradients accumulate in the
   * context on every worker involved, as with `distAutograd.backward`.
   * `contextId` defaults to the context the calling code runs in; there must
   * be one (TensorFlow.js keeps no graph on tensors, so there is no local
   * backward outside a context), and the call must run inside it.
   * `retainGraph` keeps the graph for another backward (gradients then add up).
   * @throws AutogradError 'AUTOGRAD_CONTEXT_NOT_FOUND' outside a context
   *   ('AUTOGRAD_BACKWARD_FAILED' as `distAutograd.backward` fails);
   *   InvalidArgumentError when the value is not a scalar float32 tensor.
   *
   * @example
   * ```ts
   * await agent.distAutograd.context(async (ctxId) => {
   *   const loss = agent.remote('ps', lossOf, [batch]);   // RRef<tf.Scalar>
   *   await loss.backward(ctxId);
   * });
   * ```
   */
  backward(contextId?: string, retainGraph = false): Promise<void> {
    return this.manager.backward(this as RRef<unknown>, contextId, retainGraph);
  }

  /** Drops this reference; the owner drops the value once no reference is left. Idempotent. */
  release(): Promise<void> {
    return this.manager.release(this as RRef<unknown>);
  }

  /** `await using r = agent.remote(...)` releases `r` at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }

  /** True once released. */
  get released(): boolean {
    return this.handle.released || (this.user?.released ?? false);
  }

  /** @internal Throws the reason this RRef cannot be used, if any. */
  checkUsable(): void {
    if (this.released) throw new RRefError('RREF_RELEASED', `RRef ${this.rrefId} was released`);
    if (this.user?.failure) throw this.user.failure;
  }

  toString(): string {
    return `RRef(${this.rrefId} on ${this.ownerWorker}${this.entry ? ', owner' : ''})`;
  }
}

/** The error for a use of `state` whose owner went away (an RREF_OWNER_LOST cause is kept as it is). */
export function ownerLost(state: UserState, cause: unknown): RRefError {
  if (cause instanceof RRefError && cause.code === 'RREF_OWNER_LOST') return cause;
  return new RRefError('RREF_OWNER_LOST', `the owner '${state.owner}' of RRef ${state.rrefId} is gone`, { cause });
}

/** The error for a value whose creation failed. */
export function creationFailed(rrefId: string, cause: unknown): RRefError {
  // A refusal for a peer's bound keeps its own code: the caller acts on it (release some RRefs).
  if (cause instanceof RRefError && cause.code === 'RREF_LIMIT_EXCEEDED') return cause;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new RRefError('RREF_CREATION_FAILED', `creating RRef ${rrefId} failed: ${reason}`, { cause });
}
