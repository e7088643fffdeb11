/**
 * The agent host: the narrow, typed face a worker shows to its protocols.
 *
 * Every protocol of a worker (membership, shutdown, streams, RRefs,
 * distributed autograd) is a {@link ProtocolPlugin}: it declares the control
 * message kinds and the remote function names it owns, and `install(host)`
 * hooks it into the worker through this face only: the control channel, the
 * call path (per-call metadata, taps on calls sent, wrappers around calls
 * served, the references and streams a call carries), membership events and
 * the lifecycle. The host refuses a kind or function name declared twice, and
 * a message of a kind nobody declared. Protocol code finds its plugin through
 * a typed {@link PluginKey}, never by looking for fields on an agent.
 *
 * A new protocol is one folder with its protocol constants and a plugin, and
 * one line in the agent's plugin list (rpc-agent.ts). See docs/rpc.md.
 * @module
 */
import { AsyncSlot } from '../platform/async-scope.js';
import type { Observable } from 'rxjs';
import { ShutdownError, type Transport } from '@tensorbus/core';
import type { WorkerInfo } from '../worker-info.js';
import type { CallerIdentity, CallMeta } from './call-context.js';
import type { CallRequest, StreamOpen } from './call-protocol.js';
import type { ControlHandler, ControlMessage } from './control.js';
import type { ResolvedOptions } from './options.js';

// ---- the call path's hooks -------------------------------------------------------

/** Options of one call. */
export interface CallOptions {
  /** Overrides the agent default; 0 = no timeout. */
  timeoutMs?: number;
  /** Aborting rejects the call with an `AbortError`-named error. */
  signal?: AbortSignal;
  /**
   * Times to send the call again when its callee died under it (at least
   * once instead of at most once), within the same `timeoutMs`: only for
   * functions and methods declared idempotent, and only where the callee can
   * come back (`agent.rpcSync`/`rpcAsync`, and the proxies and `toHere()` of a
   * supervised RRef); InvalidArgumentError otherwise (and on `remote()` and
   * streams, which are never sent twice). Default 0 (docs/supervision.md).
   */
  retries?: number;
}

/**
 * Told of each call about to be sent (distributed autograd records the tensors
 * of calls made inside a context). May return a function told of the call's
 * result once it arrives, before the caller sees it.
 */
export type CallTap = (to: string, args: unknown[], meta: CallMeta) => ((value: unknown) => void) | undefined;

/**
 * Runs a call's function inside whatever scope protocols need (autograd contexts, …); `args` are
 * the call's decoded arguments, `caller` who sent it (a verified member or only a claimed name).
 */
export type CallWrapper = (meta: CallMeta, run: () => Promise<unknown>, args: unknown[], caller: CallerIdentity) => Promise<unknown>;

/**
 * What the server does with the references (RRefs) a call carries, so that
 * their lifetimes follow the call and not the garbage collector.
 */
export interface CallReferences {
  /**
   * Resolves once the references among a call's arguments are usable here, by
   * `caller`; rejects to fail the call. `request` is the call itself, for what
   * must happen as it arrives, before the wait (an RRef creation opens its value).
   */
  ready(received: unknown[], caller: CallerIdentity, request: CallRequest): Promise<void>;
  /**
   * The call settled: what it received and what its result carried away are
   * let go (unless kept); `request` is the call, when it was read.
   */
  settled(references: unknown[], request?: CallRequest): void;
}

/** Starts a stream's producer for an accepted STREAM request; `ended` (if given) runs once the stream is over, however it ends. */
export type StreamStarter = (request: CallRequest, produce: () => unknown, caller: CallerIdentity, ended?: () => void) => void;

/** The codec context of a message: who sends it, to whom, on which worker. */
export interface WireContext {
  /** The worker encoding or decoding the message (none for a bare client outside any worker). */
  host: AgentHost | undefined;
  /** The worker at the other end; undefined while decoding a request (its sender is inside it). */
  peer: string | undefined;
  /** When present, extension values read from the message are added here (the callee's RRef arguments). */
  received?: unknown[];
  /** When present, extension values written into the message are added here (RRefs a callee returns). */
  sent?: unknown[];
}

/** The call being served, and by which worker. */
export interface CallScope {
  host: AgentHost;
  /** Name of the calling worker, as the call claims it (`meta.from`). */
  caller: string;
  /**
   * True when the call showed that it comes from `caller`, a current member
   * (its MAC checked with that member's keys). An unverified caller is served,
   * but must never be treated as that member: not counted for shutdown, never
   * a reason to change membership, and state it makes is not that member's.
   */
  verified: boolean;
  /** Where the transport vouches the call came from (another NATS account), if it does: see accountableName in peer-limits.ts. */
  origin?: string;
  /** Metadata that came with the call (protocol extensions put theirs here). */
  meta: CallMeta;
}

/** What the running code is serving, carried across awaits: `currentAgent()` and protocol functions read it. */
export const callScope = new AsyncSlot<CallScope>();

/** Names the object a plugin installs, and types it: `host.plugin(RREFS)` is an `RRefManager`. */
export class PluginKey<T> {
  /** Type marker only; never set. */
  declare readonly plugged: T;

  constructor(readonly name: string) {}
}

/** Why a worker left the view. */
export interface Departure {
  name: string;
  reason: 'left' | 'failed';
}

/** Why a departed worker is gone, as errors say it. */
export function departureReason(reason: Departure['reason'], failureTimeoutMs: number): string {
  return reason === 'left' ? 'left the group' : `stopped answering (no heartbeat for ${failureTimeoutMs} ms)`;
}

/** The group as every protocol sees it (kept by the membership plugin). */
export interface MembersView {
  /** This worker. */
  readonly self: WorkerInfo;
  /** A current member by name. */
  get(name: string): WorkerInfo | undefined;
  /** A current member by rank or id. */
  byId(id: number): WorkerInfo | undefined;
  /** Current members, this worker included. */
  list(): WorkerInfo[];
  /** Why `name` is gone, if it left or was declared failed. */
  departure(name: string): Departure['reason'] | undefined;
  /** Current members, on every change. */
  readonly membership$: Observable<WorkerInfo[]>;
  /** Each worker that leaves or is declared failed. */
  readonly gone$: Observable<Departure>;
  /** Each name a new instance took up after an earlier one left or failed (a restarted worker). */
  readonly rejoined$: Observable<string>;
  /** The instance id of `name` while it is a member, or of its last instance once it left or failed. */
  instanceOf(name: string): string | undefined;
  /** This worker's signature of `text` (membership keys). */
  sign(text: string): string;
  /** True when `signature` is member `from`'s signature of `text`. */
  verifyFrom(from: string, text: string, signature: unknown): boolean;
}

/**
 * What an installed plugin may do at each step of the worker's life. Every
 * method is optional; the host calls them in install order when starting and
 * in reverse order when stopping.
 */
export interface PluginLifecycle {
  /** Before the worker listens on its subjects (membership checks its name is free). */
  beforeListen?(): Promise<void>;
  /** Once it listens, before it serves (membership joins). */
  afterListen?(): Promise<void>;
  /** Once it serves (a static group waits for everyone). */
  whenRunning?(): Promise<void>;
  /** Work this plugin has outstanding (streams produced): graceful shutdown waits for it. */
  busy?(): number;
  /** Graceful shutdown, before leaving: let go of what peers hold for us (RRef forks), within `timeoutMs`. */
  beforeLeave?(timeoutMs: number): Promise<void>;
  /** The worker stops: fail or cancel what is pending with `error`. */
  stopping?(error: ShutdownError): void;
  /** The worker stopped and its transport is closed: drop every state. */
  stopped?(): void;
}

/**
 * A protocol of a worker. What `install` returns is found under `key`; the
 * host calls the {@link PluginLifecycle} methods it has.
 */
export interface ProtocolPlugin<T extends object> {
  /** The key its installed object is found under. */
  readonly key: PluginKey<T>;
  /** Control message kinds it handles (constants of its protocol module). */
  readonly kinds: readonly string[];
  /** Names of the remote functions its protocol calls (`tb.*`, registered when its module loads). */
  readonly functions: readonly string[];
  /** Hooks the protocol into `host`; runs once per worker. */
  install(host: AgentHost): T;
}

/** The face of one worker that its protocols see. */
export interface AgentHost {
  /** This worker's name. */
  readonly name: string;
  readonly transport: Transport;
  readonly options: ResolvedOptions;
  /** The group (membership plugin). */
  readonly members: MembersView;
  /** True while the worker serves calls (also while it starts). */
  readonly running: boolean;
  /** Throws ShutdownError unless running. */
  checkRunning(): void;
  /** Throws WorkerUnavailableError if `name` left or was declared failed; returns it otherwise. */
  checkLive(name: string): string;
  /** The object the plugin of `key` installed; throws if no such plugin is installed. */
  plugin<T>(key: PluginKey<T>): T;

  // ---- control channel ----
  /** Handles control messages of `kind`, which the installing plugin must have declared. */
  onControl(kind: string, handler: ControlHandler): void;
  /** Sends a control message to `worker` without waiting; its kind must be declared by a plugin. */
  sendControl(worker: string, message: ControlMessage): void;
  /** Sends a control message to `worker` and resolves with its decoded reply. */
  requestControl(worker: string, message: ControlMessage, timeoutMs: number, signal?: AbortSignal): Promise<unknown>;

  // ---- calls ----
  /** Calls protocol function `fn` (a name a plugin declared) on `to`, with this worker's call metadata. */
  call(to: string, fn: string, args: unknown[], options?: CallOptions): Promise<unknown>;
  /** Opens a stream of `fn(args)` on `to`; resolves once the callee accepted it. */
  openStream(to: string, fn: string, args: unknown[], open: StreamOpen, options?: CallOptions): Promise<unknown>;
  /** Adds a contributor of metadata to every call this worker makes. */
  contributeMeta(contributor: MetaContributor): void;
  /** Adds an observer of every call this worker makes. */
  tapCalls(tap: CallTap): void;
  /** Wraps the execution of every call this worker serves. */
  wrapServing(wrapper: CallWrapper): void;
  /** Decides what happens to the references (RRefs) calls carry; one plugin only. */
  serveReferences(references: CallReferences): void;
  /** Starts the producers of accepted stream requests; one plugin only. */
  serveStreams(starter: StreamStarter): void;
  /** The call path's counters (graceful shutdown reads them). */
  readonly callCounts: CallCounts;
}

/** The counters of a worker's call path. */
export interface CallCounts {
  /** Calls awaiting their replies plus calls being served. */
  readonly outstanding: number;
  /** `outstanding` plus the plugins' own outstanding work (streams being produced). */
  readonly busy: number;
  /** Calls sent per destination. */
  readonly sentTo: Readonly<Record<string, number>>;
  /** Calls received per verified sender. */
  readonly receivedFrom: Readonly<Record<string, number>>;
}

/** Adds protocol metadata to each outgoing call (autograd context ids, …). */
export type MetaContributor = (meta: CallMeta, to: string) => void;

/**
 * The plugin of `key` on the worker serving the current call, and the call.
 * @throws ShutdownError outside a call served by an agent: `what` names what needed one.
 */
export function servingPlugin<T>(key: PluginKey<T>, what: string): { plugin: T; scope: CallScope } {
  const scope = callScope.getStore();
  if (scope === undefined) throw new ShutdownError(`${what} runs only inside calls served by an RPC agent`);
  return { plugin: scope.host.plugin(key), scope };
}

/**
 * The plugin of `key` on the host a message is encoded or decoded for.
 * @throws ShutdownError without one: `what` names what needed it.
 */
export function pluginOf<T>(host: AgentHost | undefined, key: PluginKey<T>, what: string): T {
  if (host === undefined) throw new ShutdownError(`${what} travel only in messages of an RPC agent`);
  return host.plugin(key);
}
