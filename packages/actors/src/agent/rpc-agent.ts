/**
 * The RPC agent: one worker, an actor addressed by its name on the bus
 * [torch.distributed.rpc's RpcAgent]. Made by `initRpc`.
 * @module
 */
import type { Observable } from 'rxjs';
import {
  InvalidArgumentError,
  RpcFuture,
  RpcTimeoutError,
  ShutdownError,
  WorkerUnavailableError,
  type Transport,
} from '@tensorbus/core';
import { callableName, type Callable } from '../registry/functions.js';
import type { Received } from '../received.js';
import { isWorkerInfo, validateWorkerName, type WorkerInfo } from '../worker-info.js';
import type { CallMeta } from './call-context.js';
import { CallClient, type CallOptions } from './call-client.js';
import { CallServer } from './call-server.js';
import { CallLog } from './call-log.js';
import { ControlChannel } from './control.js';
import { Membership } from '../membership/membership.js';
import type { ResolvedOptions } from './options.js';
import { signStatus, staticBarrier, type ShutdownStatus } from '../shutdown/barrier.js';
import { CallAuth } from './call-auth.js';
import { StreamConsumers, type StreamOptions } from '../streams/stream-consumer.js';
import type { RpcStream } from '../streams/rpc-stream.js';
import type { ProfileOptions, RpcProfile } from './profiler.js';
import { StreamProducers } from '../streams/stream-producer.js';
import { RRefManager, type RRefStats } from '../rref/rref-manager.js';
import type { RRef } from '../rref/rref.js';
import '../rref/rref-codec.js';
import { DistAutograd } from '../autograd/dist-autograd.js';

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

/** Adds protocol metadata to each outgoing call (autograd context ids, …). */
export type MetaContributor = (meta: CallMeta, to: string) => void;

/** One worker on the bus. Use {@link initRpc} to make one. */
export class RpcAgent {
  /** @internal */ readonly control: ControlChannel;
  /** @internal */ readonly calls: CallClient;
  /** @internal */ readonly server: CallServer;
  /** @internal */ readonly membership: Membership;
  /** @internal MACs of calls: who sent a call (see call-auth.ts). */
  readonly callAuth: CallAuth;
  /** @internal */ readonly producers: StreamProducers;
  /** @internal */ readonly consumers: StreamConsumers;
  /** @internal */ readonly metaContributors: MetaContributor[] = [];
  /** @internal */ readonly rrefs: RRefManager;
  /** Distributed autograd of this worker [torch.distributed.autograd]: `context`, `backward`, `getGradients`. */
  readonly distAutograd: DistAutograd;
  private state: 'starting' | 'running' | 'stopping' | 'stopped' = 'starting';
  private shutdownRequested = false;
  private readonly onStopped: Array<() => void> = [];

  /** @internal */
  constructor(readonly transport: Transport, readonly options: ResolvedOptions) {
    const name = options.name;
    this.control = new ControlChannel(transport, name);
    this.membership = new Membership(transport, this.control, name, options, options.worldSize, options.rank);
    this.callAuth = new CallAuth(this.membership.identity, name, (peer) => this.membership.dhKeyOf(peer));
    this.control.authenticate(this.callAuth);
    this.calls = new CallClient(transport, name, this, () => this.options.rpcTimeoutMs, this.callAuth);
    this.producers = new StreamProducers(transport, name, this, this.control);
    this.consumers = new StreamConsumers(transport, name, this, this.calls, this.control);
    this.server = new CallServer(transport, name, this, (request, produce, caller, ended) => this.producers.start(request, produce, caller, ended), this.callAuth, new CallLog(name, options.logger));
    this.control.on('sdstatus', (m) => signStatus(this.membership, m, this.shutdownStatus()));
    this.rrefs = new RRefManager(this);
    this.distAutograd = new DistAutograd(this);
    this.membership.gone$.subscribe(({ name: gone, reason }) => {
      const why = reason === 'left' ? 'left the group' : `stopped answering (no heartbeat for ${this.options.failureTimeoutMs} ms)`;
      this.calls.failAll(gone, new WorkerUnavailableError(`worker '${gone}' ${why}`));
      this.consumers.producerGone(gone, why);
      this.producers.cancelFor(gone);
      // A failed worker may speak again as the same instance: its counters stay, so nothing it sent can be replayed.
      if (reason === 'left') this.callAuth.forget(gone);
    });
  }

  /** @internal Joins the group; resolves once a static group is complete. */
  async start(): Promise<void> {
    await this.membership.checkNameFree(Math.min(2_000, this.options.initTimeoutMs || 2_000));
    this.control.listen();
    this.server.listen();
    await this.membership.join();
    // Serving (and calling from served functions) starts now; a static group's
    // initRpc still waits for everyone below.
    this.state = 'running';
    if (this.options.worldSize !== undefined) await this.membership.awaitWorld(this.options.initTimeoutMs);
  }

  /** This worker [get_worker_info()]. */
  get self(): WorkerInfo {
    return this.membership.self;
  }

  /** Current members, this worker included. */
  get membership$(): Observable<WorkerInfo[]> {
    return this.membership.membership$.asObservable();
  }

  /** The worker named or numbered `to` [get_worker_info(name)]; WorkerUnavailableError if not a member. */
  getWorkerInfo(to?: WorkerRef): WorkerInfo {
    if (to === undefined) return this.self;
    const name = this.resolve(to);
    const info = this.membership.get(name);
    if (!info) throw new WorkerUnavailableError(`worker '${name}' is not a member of the group`);
    return info;
  }

  /** Members now. */
  workers(): WorkerInfo[] {
    return this.membership.list();
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
  remote<F extends Callable<never[], unknown>>(to: WorkerRef, fn: F, args: RemoteArgs<F> | [] = [], options: CallOptions = {}): RRef<RemoteResult<F>> {
    this.checkRunning();
    if (!Array.isArray(args)) throw new InvalidArgumentError('args must be an array');
    const name = this.resolveLive(to);
    return this.rrefs.create<RemoteResult<F>>(name, { fn: callableName(fn), args }, options);
  }

  /** A local owner RRef holding `value` [RRef(value)]. */
  rref<T>(value: T): RRef<T> {
    this.checkRunning();
    return this.rrefs.local(value);
  }

  /** Counts of this worker's RRefs: `{ owners, users, pendingUsers, pendingChildren }`. */
  rrefStats(): RRefStats {
    return this.rrefs.stats();
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
    this.checkRunning();
    const name = this.resolveLive(to);
    const fnName = callableName(fn);
    return this.consumers.open<T>(name, fnName, args, () => this.meta(name), options);
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
    const profile = this.calls.profiler.start(options);
    try {
      await fn();
    } finally {
      profile.stop();
    }
    return profile;
  }

  /** Starts recording calls until the returned profile's `stop()` (see {@link profile}). */
  startProfile(options: ProfileOptions = {}): RpcProfile {
    return this.calls.profiler.start(options);
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
    if (this.state === 'stopped' || this.state === 'stopping') return;
    const graceful = options.graceful ?? true;
    // Work, not a clock, decides how long a graceful shutdown takes; failure detection ends waits on the dead.
    const timeoutMs = options.timeoutMs ?? 0;
    this.shutdownRequested = true;
    let failure: unknown;
    if (graceful && this.state === 'running') {
      const waitedFor = this.workers().map((w) => w.name);
      try {
        if (this.options.worldSize !== undefined) {
          await staticBarrier(
            {
              name: this.self.name,
              control: this.control,
              status: () => this.shutdownStatus(),
              liveMembers: () => this.workers().map((w) => w.name),
              verify: (from, text, signature) => this.membership.verifyFrom(from, text, signature),
            },
            timeoutMs,
          );
        } else if (!(await this.drain(timeoutMs))) {
          failure = new RpcTimeoutError(
            `graceful shutdown of '${this.self.name}' timed out after ${timeoutMs} ms with ${this.calls.inFlight + this.server.running} call(s) outstanding`,
          );
        }
      } catch (error) {
        failure = error;
      }
      const failed = waitedFor.filter((name) => this.membership.departure(name) === 'failed');
      if (failed.length > 0) {
        process.stderr.write(`[tensorbus] graceful shutdown of '${this.self.name}' went on without ${failed.map((n) => `'${n}'`).join(', ')}: declared failed (stopped answering)\n`);
      }
      await this.rrefs.releaseAll(Math.min(timeoutMs || 5_000, 5_000));
    }
    await this.stop();
    if (failure) throw failure;
  }

  /** @internal Runs `hook` once the agent has stopped. */
  whenStopped(hook: () => void): void {
    this.onStopped.push(hook);
  }

  /** @internal True while the agent accepts calls. */
  get running(): boolean {
    return this.state === 'running' || this.state === 'starting';
  }

  /** @internal Metadata for a call to `to`. */
  meta(to: string): CallMeta {
    const meta: CallMeta = { from: this.membership.name };
    for (const contribute of this.metaContributors) contribute(meta, to);
    return meta;
  }

  /** @internal The worker name `to` stands for. */
  resolve(to: WorkerRef): string {
    if (typeof to === 'string') {
      validateWorkerName(to);
      return to;
    }
    if (typeof to === 'number') {
      const info = this.membership.byId(to);
      if (!info) throw new WorkerUnavailableError(`no worker has rank ${to}`);
      return info.name;
    }
    if (isWorkerInfo(to)) return to.name;
    throw new InvalidArgumentError('`to` must be a worker name, a rank or a WorkerInfo');
  }

  /** @internal The name `to` stands for, refusing workers known to have left or failed. */
  resolveLive(to: WorkerRef): string {
    const name = this.resolve(to);
    const departure = this.membership.departure(name);
    if (departure) {
      throw new WorkerUnavailableError(`worker '${name}' ${departure === 'left' ? 'left the group' : 'was declared failed'}`);
    }
    return name;
  }

  /** @internal Throws ShutdownError unless running. */
  checkRunning(): void {
    // A starting agent already serves calls, and the functions it runs may call out.
    if (this.state === 'stopping' || this.state === 'stopped') {
      throw new ShutdownError(`RPC agent '${this.membership.name}' is not running: call initRpc() first`);
    }
  }

  private async invoke(to: WorkerRef, fn: Callable<never[], unknown>, args: unknown[], options: CallOptions): Promise<unknown> {
    this.checkRunning();
    if (!Array.isArray(args)) throw new InvalidArgumentError('args must be an array');
    const name = this.resolveLive(to);
    return this.calls.call(name, callableName(fn), args, this.meta(name), options);
  }

  private shutdownStatus(): ShutdownStatus {
    return {
      requested: this.shutdownRequested,
      busy: this.calls.inFlight + this.server.running + this.producers.active,
      sentTo: this.calls.sentTo,
      receivedFrom: this.server.receivedFrom,
    };
  }

  private async drain(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.calls.inFlight + this.server.running > 0) {
      if (timeoutMs > 0 && Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return true;
  }

  private async stop(): Promise<void> {
    this.state = 'stopping';
    this.server.refuse();
    const error = new ShutdownError(`RPC agent '${this.membership.name}' shut down`);
    this.calls.failEverything(error);
    this.consumers.failAll(error);
    this.producers.cancelAll();
    this.membership.leave();
    try {
      await this.transport.flush();
    } catch {
      // Closing anyway.
    }
    this.server.close();
    this.control.close();
    await this.transport.close();
    this.rrefs.clear();
    this.state = 'stopped';
    for (const hook of this.onStopped.splice(0)) hook();
  }
}
