/**
 * The host of one worker: its transport, control channel and call path, and
 * the protocol plugins installed on them (see host.ts). The public
 * {@link RpcAgent} is a thin face over it.
 * @module
 */
import type { Observable } from 'rxjs';
import { InvalidArgumentError, ShutdownError, WorkerUnavailableError, type Transport } from '@tensorbus/core';
import { waitAtMost } from '@tensorbus/core/internal';
import { lookupCallable } from '../registry/functions.js';
import { CallAuth } from './call-auth.js';
import { CallClient } from './call-client.js';
import type { CallMeta } from './call-context.js';
import { CallLog } from './call-log.js';
import type { StreamOpen } from './call-protocol.js';
import { CallServer } from './call-server.js';
import { ControlChannel, type ControlHandler, type ControlMessage } from './control.js';
import type {
  AgentHost,
  CallOptions,
  CallCounts,
  CallReferences,
  CallTap,
  CallWrapper,
  MembersView,
  MetaContributor,
  PluginKey,
  PluginLifecycle,
  ProtocolPlugin,
  StreamStarter,
} from './host.js';
import { callScope, departureReason } from './host.js';
import type { Identity } from './identity.js';
import type { ResolvedOptions } from './options.js';
import { waitedByOnward } from './reentrancy.js';
import { exclusiveServing } from '../platform/async-scope.js';

/** How long stop() waits for the transport's flush, and then for its close, before going on without them. */
const STOP_NETWORK_MS = 3_000;

/** What the membership plugin gives the host besides the view every plugin sees: the keys calls are sealed with. */
export interface MembershipFace extends MembersView, PluginLifecycle {
  readonly identity: Identity;
  /** The X25519 key `name` announced, while it can still send (see call-auth.ts). */
  dhKeyOf(name: string): string | undefined;
}

/** A plugin of the list an agent installs. */
export type AnyPlugin = ProtocolPlugin<object>;

type State = 'starting' | 'running' | 'stopping' | 'stopped';

/** One worker's host; made by the agent with its plugins. */
export class WorkerHost implements AgentHost {
  readonly name: string;
  readonly members: MembershipFace;
  readonly control: ControlChannel;
  readonly calls: CallClient;
  readonly server: CallServer;
  readonly callAuth: CallAuth;
  /** Installed plugins' objects, in install order (their lifecycles run in it). */
  private readonly installed = new Map<PluginKey<unknown>, PluginLifecycle>();
  /** Protocol function name -> the plugin that declared it. */
  private readonly functionOwners = new Map<string, string>();
  private readonly metaContributors: MetaContributor[] = [];
  private installing: AnyPlugin | undefined;
  private state: State = 'starting';
  /**
   * While this worker starts (it serves, and the functions it runs call out,
   * from the moment it listens, before its initRpc returns; a static group's
   * until it is complete): settles once started, or failed to. Undefined
   * otherwise.
   */
  forming: Promise<void> | undefined;

  /** Installs `membership` first (its view is the host's), then `plugins` in order. */
  constructor(readonly transport: Transport, readonly options: ResolvedOptions, membership: ProtocolPlugin<MembershipFace>, plugins: readonly AnyPlugin[]) {
    this.name = options.name;
    this.control = new ControlChannel(transport, this.name);
    this.members = this.install(membership);
    this.callAuth = new CallAuth(this.members.identity, this.name, (peer) => this.members.dhKeyOf(peer));
    this.control.authenticate(this.callAuth);
    this.calls = new CallClient(transport, this.name, this, () => this.options.rpcTimeoutMs, this.callAuth);
    this.server = new CallServer(transport, this.name, this, this.callAuth, new CallLog(this.name, options.logger));
    // A caller not heard of yet while the group forms is checked once its keys came with the group.
    this.server.awaitCaller = (from) => (this.forming !== undefined && this.members.get(from) === undefined ? this.forming : undefined);
    this.members.gone$.subscribe(({ name: gone, reason }) => {
      this.calls.failAll(gone, new WorkerUnavailableError(`worker '${gone}' ${departureReason(reason, this.options.failureTimeoutMs)}`));
      // A failed worker may speak again as the same instance: its counters stay, so nothing it sent can be replayed.
      if (reason === 'left') this.callAuth.forget(gone);
    });
    // A new incarnation has received nothing yet: shutdown's barrier counts its calls from zero on both sides.
    this.members.rejoined$.subscribe((name) => {
      delete this.calls.sentTo[name];
      delete this.server.receivedFrom[name];
    });
    for (const plugin of plugins) this.install(plugin);
  }

  // ---- plugins ------------------------------------------------------------------

  plugin<T>(key: PluginKey<T>): T {
    const found = this.installed.get(key);
    if (found === undefined) throw new InvalidArgumentError(`no protocol plugin '${key.name}' is installed on worker '${this.name}'`);
    return found as T;
  }

  private install<T extends object>(plugin: ProtocolPlugin<T>): T {
    const name = plugin.key.name;
    if (this.installed.has(plugin.key)) throw new InvalidArgumentError(`protocol plugin '${name}' is installed twice`);
    this.control.declare(name, plugin.kinds);
    for (const fn of plugin.functions) {
      const owner = this.functionOwners.get(fn);
      if (owner !== undefined) throw new InvalidArgumentError(`protocol plugins '${owner}' and '${name}' both declare the function '${fn}'`);
      // Declared functions exist: a misspelt name fails here, not at the first call.
      lookupCallable(fn, this.name);
      this.functionOwners.set(fn, name);
    }
    this.installing = plugin;
    try {
      const object = plugin.install(this);
      this.installed.set(plugin.key, object);
      return object;
    } finally {
      this.installing = undefined;
    }
  }

  // ---- the face plugins see ------------------------------------------------------------

  get running(): boolean {
    return this.state === 'running' || this.state === 'starting';
  }

  checkRunning(): void {
    // A starting agent already serves calls, and the functions it runs may call out.
    if (this.state === 'stopping' || this.state === 'stopped') {
      throw new ShutdownError(`RPC agent '${this.name}' is not running: call initRpc() first`);
    }
  }

  checkLive(name: string): string {
    const departure = this.members.departure(name);
    if (departure) throw new WorkerUnavailableError(`worker '${name}' ${departure === 'left' ? 'left the group' : 'was declared failed'}`);
    return name;
  }

  onControl(kind: string, handler: ControlHandler): void {
    if (this.installing === undefined || !this.installing.kinds.includes(kind)) {
      throw new InvalidArgumentError(`control kind '${kind}' is not declared by the plugin installing its handler`);
    }
    this.control.on(kind, handler);
  }

  sendControl(worker: string, message: ControlMessage): void {
    this.control.send(worker, message);
  }

  requestControl(worker: string, message: ControlMessage, timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
    return this.control.request(worker, message, timeoutMs, signal);
  }

  call(to: string, fn: string, args: unknown[], options: CallOptions = {}): Promise<unknown> {
    if (!this.functionOwners.has(fn)) throw new InvalidArgumentError(`'${fn}' is not a function any protocol plugin declared`);
    return this.calls.call(to, fn, args, this.meta(to), options);
  }

  openStream(to: string, fn: string, args: unknown[], open: StreamOpen, options: CallOptions = {}): Promise<unknown> {
    return this.calls.openStream(to, fn, args, this.meta(to), open, options);
  }

  contributeMeta(contributor: MetaContributor): void {
    this.metaContributors.push(contributor);
  }

  tapCalls(tap: CallTap): void {
    this.calls.taps.push(tap);
  }

  wrapServing(wrapper: CallWrapper): void {
    this.server.wrap(wrapper);
  }

  serveReferences(references: CallReferences): void {
    this.server.serveReferences(references);
  }

  serveStreams(starter: StreamStarter): void {
    this.server.serveStreams(starter);
  }

  // ---- for the agent -------------------------------------------------------------------

  /** Metadata for a call to `to`. */
  meta(to: string): CallMeta {
    const meta: CallMeta = { from: this.name };
    // Servers waiting on this call's answer, and this one if it serves one call at a time (reentrancy.ts).
    const waitedBy = waitedByOnward(callScope.getStore()?.meta, this.name, exclusiveServing?.serving());
    if (waitedBy !== undefined) meta.waitedBy = waitedBy;
    for (const contribute of this.metaContributors) contribute(meta, to);
    return meta;
  }

  /** Joins the group; resolves once the plugins' start steps are done (a static group is complete). */
  async start(): Promise<void> {
    const starting = this.startSteps();
    // Calls are served from the moment the server listens, the group still forming: see `forming`.
    const formed = () => void (this.forming = undefined);
    this.forming = starting.then(formed, formed);
    await starting;
  }

  private async startSteps(): Promise<void> {
    for (const plugin of this.installed.values()) await plugin.beforeListen?.();
    this.control.listen();
    this.server.listen();
    for (const plugin of this.installed.values()) await plugin.afterListen?.();
    // Serving (and calling from served functions) starts now; a static group's initRpc still waits for everyone.
    this.state = 'running';
    for (const plugin of this.installed.values()) await plugin.whenRunning?.();
  }

  get callCounts(): CallCounts {
    const outstanding = this.calls.inFlight + this.server.running;
    let busy = outstanding;
    for (const plugin of this.installed.values()) busy += plugin.busy?.() ?? 0;
    return { outstanding, busy, sentTo: this.calls.sentTo, receivedFrom: this.server.receivedFrom };
  }

  /** Graceful shutdown's last step before leaving: each plugin lets go of what peers hold for it. */
  async beforeLeave(timeoutMs: number): Promise<void> {
    for (const plugin of this.installed.values()) await plugin.beforeLeave?.(timeoutMs);
  }

  /** True once started and until stop() begins (not while starting). */
  get serving(): boolean {
    return this.state === 'running';
  }

  /** True once stop() began. */
  get stopping(): boolean {
    return this.state === 'stopping' || this.state === 'stopped';
  }

  /** Refuses new calls, fails pending ones, leaves the group and closes the transport. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.state = 'stopping';
    this.server.refuse();
    const error = new ShutdownError(`RPC agent '${this.name}' shut down`);
    this.calls.failEverything(error);
    for (const plugin of [...this.installed.values()].reverse()) plugin.stopping?.(error);
    // Leaving never waits on the network for good: a flush or close that has not completed in STOP_NETWORK_MS
    // (a connection stuck reconnecting) is given up; peers then learn of the departure by failure detection.
    await waitAtMost(this.transport.flush(), STOP_NETWORK_MS);
    this.server.close();
    this.control.close();
    await waitAtMost(this.transport.close(), STOP_NETWORK_MS);
    for (const plugin of [...this.installed.values()].reverse()) plugin.stopped?.();
    this.state = 'stopped';
  }
}
