/**
 * The RPC agent: one worker, an actor addressed by its name on the bus
 * [torch.distributed.rpc's RpcAgent]. Made by `initRpc`.
 * @module
 */
import type { Observable } from 'rxjs';
import { InvalidArgumentError, RpcFuture, WorkerUnavailableError, type Transport } from '@tensorbus/core';
import { callableName, isIdempotent, type Callable } from '../registry/functions.js';
import { Budget } from '../rref/bounded-wait.js';
import { nextIncarnation, retriesOf, withRetries, type RemoteOptions } from '../rref/supervised.js';
import type { Received } from '../received.js';
import { isWorkerInfo, validateWorkerName, type WorkerInfo } from '../worker-info.js';
import { markOpaque } from '../rref/held-tensors.js';
import { membershipPlugin } from '../membership/plugin.js';
import { shutdownPlugin, SHUTDOWN } from '../shutdown/plugin.js';
import { streamsPlugin, STREAMS } from '../streams/plugin.js';
import { rrefPlugin, RREFS } from '../rref/plugin.js';
import { autogradPlugin, AUTOGRAD } from '../autograd/plugin.js';
import { observePlugin } from '../observe/plugin.js';
import type { DistAutograd } from '../autograd/dist-autograd.js';
import type { RRefStats } from '../rref/rref-manager.js';
import type { RRef } from '../rref/rref.js';
import type { StreamOptions } from '../streams/stream-consumer.js';
import type { RpcStream } from '../streams/rpc-stream.js';
import { WorkerHost, type AnyPlugin } from './agent-host.js';
import type { AgentHost, CallOptions } from './host.js';
import type { ResolvedOptions } from './options.js';
import type { ProfileOptions, RpcProfile } from './profiler.js';

/**
 * The protocols every agent runs, in install order (membership is installed
 * first, by the host). A new protocol is one folder with a plugin, and one
 * line here.
 */
const PLUGINS: readonly AnyPlugin[] = [
  shutdownPlugin,
  streamsPlugin,
  rrefPlugin,
  autogradPlugin,
  observePlugin,
];

/** The host behind each agent (for the library's own tests and tools: `hostOf` in internal.ts). */
const hosts = new WeakMap<RpcAgent, WorkerHost>();
/** The agent of each host (`currentAgent()` inside a call). */
const agents = new WeakMap<AgentHost, RpcAgent>();

/** @internal The host of `agent`. */
export function hostOf(agent: RpcAgent): WorkerHost {
  return hosts.get(agent)!;
}

/** @internal The agent whose host is `host`. */
export function agentOf(host: AgentHost): RpcAgent | undefined {
  return agents.get(host);
}

/** Where a call goes: a worker name, a rank/id, or a WorkerInfo. */
export type WorkerRef = string | number | WorkerInfo;

/** Options of {@link RpcAgent.shutdown}. */
export interface ShutdownOptions {
  /** Wait for outstanding work first (default true). */
  graceful?: boolean;
  /** How long a graceful shutdown may wait, ms (default 0: as long as the others are alive and working; failed peers are not waited for). */
  timeoutMs?: number;
}

/** The result type of calling `F` remotely, as the callee makes it (`remote()` keeps it there; `rpcSync` delivers {@link Received} of it). */
export type RemoteResult<F> = F extends new (...args: never[]) => infer T
  ? T
  : F extends (...args: never[]) => infer R
    ? Awaited<R>
    : unknown;

/** The argument list of `F`. */
export type RemoteArgs<F> = F extends new (...args: infer A) => unknown
  ? A
  : F extends (...args: infer A) => unknown
    ? A
    : unknown[];

/** One worker on the bus. Use {@link initRpc} to make one. */
export class RpcAgent {
  /** Distributed autograd of this worker [torch.distributed.autograd]: `context`, `backward`, `getGradients`. */
  readonly distAutograd: DistAutograd;
  private readonly host: WorkerHost;
  private readonly onStopped: Array<() => void> = [];

  /** @internal */
  constructor(transport: Transport, options: ResolvedOptions, extraPlugins: readonly AnyPlugin[] = []) {
    this.host = new WorkerHost(transport, options, membershipPlugin, [...PLUGINS, ...extraPlugins]);
    hosts.set(this, this.host);
    agents.set(this.host, this);
    // A value referencing the agent must not make everything the agent holds look like its own.
    markOpaque(this);
    this.distAutograd = this.host.plugin(AUTOGRAD);
  }

  /** The transport this agent owns (closed by its shutdown). */
  get transport(): Transport {
    return this.host.transport;
  }

  /**
   * The default timeout of this worker's calls, ms, as `initRpc`'s
   * `rpcTimeoutMs` set it (60,000 unless told); `0` means none
   * [get_rpc_timeout()]. Read-only: a call's own `timeoutMs` overrides it.
   * @example
   * const agent = await initRpc({ name: 'w0', rpcTimeoutMs: 5_000 });
   * agent.rpcTimeoutMs; // 5000
   */
  get rpcTimeoutMs(): number {
    return this.host.options.rpcTimeoutMs;
  }

  /** @internal Joins the group; resolves once a static group is complete. */
  start(): Promise<void> {
    return this.host.start();
  }

  /** This worker [get_worker_info()]. */
  get self(): WorkerInfo {
    return this.host.members.self;
  }

  /** Current members, this worker included. */
  get membership$(): Observable<WorkerInfo[]> {
    return this.host.members.membership$;
  }

  /** The worker named or numbered `to` [get_worker_info(name)]; WorkerUnavailableError if not a member. */
  getWorkerInfo(to?: WorkerRef): WorkerInfo {
    if (to === undefined) return this.self;
    const name = this.resolve(to);
    const info = this.host.members.get(name);
    if (!info) throw new WorkerUnavailableError(`worker '${name}' is not a member of the group`);
    return info;
  }

  /** Members now. */
  workers(): WorkerInfo[] {
    return this.host.members.list();
  }

  /**
   * Runs `fn(...args)` on `to` and resolves with the result [rpc_sync].
   *
   * @example
   * ```ts
   * const y = await agent.rpcSync('w1', add, [a, b], { timeoutMs: 5000 });
   * ```
   */
  rpcSync<F extends Callable<never[], unknown>>(to: WorkerRef, fn: F, args: RemoteArgs<F> | [] = [], options: CallOptions = {}): Promise<Received<RemoteResult<F>>> {
    return this.invoke(to, fn, args as unknown[], options) as Promise<Received<RemoteResult<F>>>;
  }

  /**
   * Runs `fn(...args)` on `to` and returns a future of the result [rpc_async].
   *
   * @example
   * ```ts
   * const [y1, y2] = await RpcFuture.all([agent.rpcAsync('w1', add, [a, b]), agent.rpcAsync(2, add, [a, b])]);
   * ```
   */
  rpcAsync<F extends Callable<never[], unknown>>(to: WorkerRef, fn: F, args: RemoteArgs<F> | [] = [], options: CallOptions = {}): RpcFuture<Received<RemoteResult<F>>> {
    return new RpcFuture(this.invoke(to, fn, args as unknown[], options) as Promise<Received<RemoteResult<F>>>);
  }

  /**
   * Runs `fn(...args)` on `to`, keeps the result there, and returns a
   * reference to it at once [remote]. A failure surfaces at the next use of
   * the RRef as RRefError 'RREF_CREATION_FAILED'.
   *
   * @example
   * ```ts
   * const counter = agent.remote('w1', Counter, []);
   * await counter.rpcSync().inc(5);
   * await counter.release();
   * ```
   */
  remote<F extends Callable<never[], unknown>>(to: WorkerRef, fn: F, args: RemoteArgs<F> | [] = [], options: RemoteOptions = {}): RRef<RemoteResult<F>> {
    this.host.checkRunning();
    if (!Array.isArray(args)) throw new InvalidArgumentError('args must be an array');
    const name = this.resolveLive(to);
    return this.host.plugin(RREFS).create<RemoteResult<F>>(name, { fn: callableName(fn), args }, options);
  }

  /** A local owner RRef holding `value` [RRef(value)]. */
  rref<T>(value: T): RRef<T> {
    this.host.checkRunning();
    return this.host.plugin(RREFS).local(value);
  }

  /** Counts of this worker's RRefs: `{ owners, users, pendingUsers, pendingChildren }`. */
  rrefStats(): RRefStats {
    return this.host.plugin(RREFS).stats();
  }

  /**
   * Streams what `fn(...args)` yields on `to` (an AsyncIterable or Observable
   * there). Cold: each subscription (or iteration) runs the function once.
   * Unsubscribing cancels the producer; a slow consumer slows it through
   * bounded credit, returned as the consumer finishes with items: when a
   * subscriber's `next` returns or the promises it made for the item settle
   * (so `concatMap(async …)` holds it too), when a `for await` loop asks for
   * the next item, or when `concatMapStream`'s work for an item completes.
   *
   * @example
   * ```ts
   * agent.rpcStream('w1', countTo, [5]).subscribe((n) => console.log(n));
   * for await (const n of agent.rpcStream<number>('w1', countTo, [5])) await save(n);
   * ```
   */
  rpcStream<T = unknown>(to: WorkerRef, fn: Callable<never[], unknown>, args: unknown[] = [], options: StreamOptions = {}): RpcStream<T> {
    this.host.checkRunning();
    if (retriesOf(options) > 0) throw new InvalidArgumentError('retries apply to rpcSync and rpcAsync calls, not to streams: a stream is never run twice');
    const name = this.resolveLive(to);
    return this.host.plugin(STREAMS).consumers.open<T>(name, callableName(fn), args, options);
  }

  /**
   * Records every call this agent makes while `fn` runs (awaited), and
   * resolves with the profile [torch.autograd.profiler.profile with RPC
   * events]: per call its worker, function, request and reply bytes, and
   * where its time went (encode, the callee's queue and run as the callee
   * reports them, transport, decode). The profile is agent-wide: calls made
   * meanwhile by other code on this agent are in it too. If `fn` throws, the
   * profile stops and this rejects with the error.
   *
   * @example
   * ```ts
   * const profile = await agent.profile(async () => {
   *   await agent.rpcSync('ps', getWeights, []);
   * });
   * writeFileSync('trace.json', JSON.stringify(profile.toChromeTrace()));
   * ```
   */
  async profile(fn: () => unknown, options: ProfileOptions = {}): Promise<RpcProfile> {
    const profile = this.host.calls.profiler.start(options);
    try {
      await fn();
    } finally {
      profile.stop();
    }
    return profile;
  }

  /** Starts recording calls until the returned profile's `stop()` (see {@link profile}). */
  startProfile(options: ProfileOptions = {}): RpcProfile {
    return this.host.calls.profiler.start(options);
  }

  /**
   * Leaves the group [shutdown]. Graceful (default): a static group waits
   * until no worker has outstanding work; a dynamic one drains this worker's
   * calls. Without `timeoutMs` it waits as long as the others are alive and
   * working, and goes on without a peer only once failure detection declares
   * it failed (naming it on stderr). With `timeoutMs`, it rejects with
   * RpcTimeoutError naming whom it waited for if that takes longer, after
   * leaving anyway.
   */
  async shutdown(options: ShutdownOptions = {}): Promise<void> {
    const host = this.host;
    if (host.stopping) return;
    const graceful = options.graceful ?? true;
    // Work, not a clock, decides how long a graceful shutdown takes; failure detection ends waits on the dead.
    const timeoutMs = options.timeoutMs ?? 0;
    let failure: unknown;
    if (graceful && host.serving) {
      failure = await host.plugin(SHUTDOWN).drain(timeoutMs);
      await host.beforeLeave(timeoutMs);
    }
    await host.stop();
    for (const hook of this.onStopped.splice(0)) hook();
    if (failure) throw failure;
  }

  /** @internal Runs `hook` once the agent has stopped. */
  whenStopped(hook: () => void): void {
    this.onStopped.push(hook);
  }

  /** The worker name `to` stands for. */
  private resolve(to: WorkerRef): string {
    if (typeof to === 'string') {
      validateWorkerName(to);
      return to;
    }
    if (typeof to === 'number') {
      const info = this.host.members.byId(to);
      if (!info) throw new WorkerUnavailableError(`no worker has rank ${to}`);
      return info.name;
    }
    if (isWorkerInfo(to)) return to.name;
    throw new InvalidArgumentError('`to` must be a worker name, a rank or a WorkerInfo');
  }

  /** True when `to` names a member this worker knows now (a rank or a name), or is no worker reference at all. */
  private knows(to: WorkerRef): boolean {
    if (typeof to === 'number') return this.host.members.byId(to) !== undefined;
    if (typeof to === 'string') return this.host.members.get(to) !== undefined;
    return !isWorkerInfo(to) || this.host.members.get(to.name) !== undefined;
  }

  /** The name `to` stands for, refusing workers known to have left or failed. */
  private resolveLive(to: WorkerRef): string {
    return this.host.checkLive(this.resolve(to));
  }

  private async invoke(to: WorkerRef, fn: Callable<never[], unknown>, args: unknown[], options: CallOptions): Promise<unknown> {
    this.host.checkRunning();
    if (!Array.isArray(args)) throw new InvalidArgumentError('args must be an array');
    // A worker serves calls before its static group is complete (its initRpc still waits): a function it runs
    // may call a rank or a member it has not heard of yet, which names a worker once the group is complete.
    const forming = this.host.forming;
    if (forming !== undefined && !this.knows(to)) await forming;
    const name = this.resolveLive(to);
    const fnName = callableName(fn);
    if (retriesOf(options) === 0) return this.host.calls.call(name, fnName, args, this.host.meta(name), options);
    const { retries: _, ...once } = options;
    let inst: string | undefined;
    const budget = Budget.of(options, this.host.options.rpcTimeoutMs);
    return withRetries(options, budget, () => isIdempotent(fnName), `function '${fnName}'`, (rest) => {
      inst = this.host.members.instanceOf(name);
      return this.host.calls.call(name, fnName, args, this.host.meta(name), { ...once, timeoutMs: rest.timeoutMs });
    }, () => nextIncarnation(this.host.members, name, inst, budget));
  }
}
