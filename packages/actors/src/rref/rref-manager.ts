/**
 * One worker's RRefs: the values it owns, the user forks it holds, and the
 * protocol between them (fork, child accept, delete), with the guarantees of
 * PyTorch's RRef design: the owner learns of every user deletion (G1), and a
 * parent keeps its reference until its child is confirmed by the owner (G2).
 * Beyond PyTorch, a user that dies loses its forks on its owners, and an owner
 * that dies fails its RRefs' uses with RREF_OWNER_LOST. See docs/rref.md.
 * @module
 */
import { InvalidArgumentError, RRefError, SerializationError, WorkerUnavailableError } from '@tensorbus/core';
import { errorFromWire, errorToWire, waitAtMost, type WireError } from '@tensorbus/core/internal';
import type { CallerIdentity } from '../agent/call-context.js';
import type { ControlMessage } from '../agent/control.js';
import type { AgentHost, CallOptions, PluginLifecycle, WireContext } from '../agent/host.js';
import type { WorkerInfo } from '../worker-info.js';
import { isCurrentMember, isWireId, leaseTimer, PeerCounter } from '../peer-limits.js';
import { markOpaque } from './held-tensors.js';
import { holderName, holdsAnyFork, holdsFork, isExpectedHolder, unknownRRef } from './holders.js';
import { randomIdPart } from '../random-id.js';
import { OwnerTable, type OwnerEntry } from './owner-table.js';
import { sendReliably, type ReliableSender } from './reliable.js';
import { DELETE_BATCH_MAX, DeleteBatches } from './delete-batches.js';
import { CALL_FN, CHILD_ACCEPT, CREATE_FN, DELETE, FETCH_FN, FORK, FORKED, type CreateSpec, type RRefWire } from './rref-protocol.js';
import { creationFailed, ownerLost, RRef, type HandleState, type RRefHost, type UserState } from './rref.js';
import { Budget } from './bounded-wait.js';
import { RecentSet, TOMBSTONES } from '../recent-set.js';
import { rrefBackward } from './rref-backward.js';
import { CreationLaunches } from './creation-launch.js';
import { fetchBehindCreation, fetchWithCreation, type FetchAheadHost } from './fetch-ahead.js';
import { isIdempotent } from '../registry/functions.js';
import { checkpointKey } from './object-checkpoints.js';
import { backAfter, maxRestartsOf, ownerGone, recreate, releasedWhileAway, retriesOf, supervise, wakeWaiters, withRetries, type RemoteOptions } from './supervised.js';
import { unrefTimer } from '../platform/process.js';

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

/** How long a fork waits for the creation of its value to reach the owner, ms. */
const FORK_WAIT_MS = 5_000;
/** Entries opened here for RRefs that arrived before their creation, at most, at once. */
const AWAITED_MAX = 1_000;
/** Deletes kept for one owner declared failed, to send if it comes back. */
const OWED_PER_OWNER = 10_000;

type Held = { kind: 'user'; forkId: string; flag: HandleState } | { kind: 'owner'; entry: OwnerEntry; flag: HandleState };

/** The RRef side of one agent. */
export class RRefManager implements RRefHost, PluginLifecycle, FetchAheadHost {
  readonly owners: OwnerTable;
  private readonly users = new Map<string, UserState>();
  private readonly tombstones = new RecentSet<string>(TOMBSTONES);
  private readonly collected = new FinalizationRegistry<Held>((held) => this.onCollected(held));
  /**
   * Deletes of forks whose owner was declared failed: sent if it comes back
   * (a stalled worker wrongly declared failed still holds the values), so it
   * does not keep them for good. owner -> `${rrefId}|${forkId}`.
   */
  private readonly owed = new Map<string, RecentSet<string>>();
  private leaseTimer: NodeJS.Timeout | undefined;
  /** User forks held here, per owner (RRefs that arrive are bounded per owner they name). */
  private readonly usersPerOwner = new PeerCounter();
  /** Entries awaiting their creation (see OwnerEntry.awaitingCreation) -> their expiry timers. */
  private readonly awaited = new Map<OwnerEntry, NodeJS.Timeout>();

  /** Acknowledged control messages to owners and parents (reliable.ts). */
  private readonly sender: ReliableSender;
  /** Creation calls waiting for the end of the code that called `remote()` (creation-launch.ts). */
  private readonly launches = new CreationLaunches();
  /** Deletes on their way to owners, one message per owner per window. */
  private readonly deletes = new DeleteBatches((owner, forks) => sendReliably(this.sender, owner, { k: DELETE, forks }).then(() => undefined));

  /** Installed by the RRef plugin (plugin.ts). */
  constructor(private readonly host: AgentHost) {
    this.owners = new OwnerTable(host.name, () => host.options.peerLimits, (entry) => {
      // A supervised object's checkpoint ends with it.
      const store = host.options.checkpoints;
      if (entry.supervised && store?.delete) void store.delete(checkpointKey(entry.rrefId)).catch(() => undefined);
    });
    // A value referencing the worker must not make everything it holds look like its own.
    markOpaque(host);
    markOpaque(this);
    host.onControl(FORKED, (m, sender) => this.onForked(m, sender));
    host.onControl(FORK, (m, sender) => this.onFork(m, sender));
    host.onControl(CHILD_ACCEPT, (m) => this.onChildAccept(m));
    host.onControl(DELETE, (m, sender) => this.onDelete(m, sender));
    // A call leaving this worker goes after the creations remote() made before it.
    host.tapCalls(() => {
      if (this.launches.pending) this.launches.sendAll();
      return undefined;
    });
    // Calls wait for their RRef arguments to be usable, and let go of the RRefs they carried when they settle.
    host.serveReferences({
      ready: (received, caller) => this.argumentsReady(received, host.options.rpcTimeoutMs, caller),
      settled: (references) => this.releaseCallRefs(references),
    });
    this.sender = {
      request: (worker, message, timeoutMs) => host.requestControl(worker, message, timeoutMs),
      gone: (worker) => host.members.departure(worker) !== undefined,
      stopped: () => !host.running,
    };
    host.members.gone$.subscribe(({ name, reason }) => this.onWorkerGone(name, reason));
    host.members.rejoined$.subscribe((name) => this.onRejoined(name));
    host.members.membership$.subscribe((members) => this.onMembers(members));
    this.leaseTimer = leaseTimer(host.options.peerLimits.leaseMs, () => this.expireLeases());
  }

  get selfName(): string {
    return this.host.name;
  }

  // ---- lifecycle (see PluginLifecycle in host.ts) ----

  /** Graceful shutdown lets go of every user fork held here first. */
  beforeLeave(timeoutMs: number): Promise<void> {
    return this.releaseAll(Math.min(timeoutMs || 5_000, 5_000));
  }

  /** After shutdown: forgets everything. */
  stopped(): void {
    this.clear();
  }

  /** Counts of owned values, held forks and pending forks. */
  stats(): RRefStats {
    let pendingChildren = 0;
    let users = 0;
    for (const state of this.users.values()) {
      pendingChildren += state.pendingChildren.size;
      // A released fork is no longer held here, though its delete may still be on its way to the owner.
      if (!state.released) users++;
    }
    return { owners: this.owners.size, users, pendingUsers: this.owners.pendingUsers, pendingChildren };
  }

  /** A new id, unique in the namespace: this worker's name and 128 random bits (random-id.ts). */
  newId(): string {
    return `${this.selfName}.${randomIdPart()}`;
  }

  workerInfo(name: string): WorkerInfo {
    return this.host.members.get(name) ?? { name, id: -1 };
  }

  // ---- making RRefs ----------------------------------------------------------

  /** A local owner RRef of `value` [RRef(value)]. */
  local<T>(value: T): RRef<T> {
    const entry = this.owners.open(this.newId());
    const rref = this.ownerHandle<T>(entry);
    entry.settle(value);
    return rref;
  }

  /** Creates a value on `to` and returns its RRef at once [remote()]. */
  create<T>(to: string, spec: CreateSpec, remoteOptions: RemoteOptions, after?: Promise<void>): RRef<T> {
    const { maxRestarts: _, ...options } = remoteOptions;
    if (retriesOf(options) > 0) throw new InvalidArgumentError('retries apply to calls (rpcSync, rpcAsync, toHere), not to remote(): a creation is never sent twice');
    const supervision = supervise(spec, maxRestartsOf(remoteOptions));
    if (supervision) {
      if (to === this.selfName) throw new InvalidArgumentError('maxRestarts: an object on this worker dies with its creator; supervise objects on other workers');
      spec = supervision.spec;
    }
    const rrefId = this.newId();
    if (to === this.selfName) {
      const entry = this.owners.open(rrefId);
      const rref = this.ownerHandle<T>(entry);
      // The entry carries a failure (here or on the way) to the next use.
      this.host.call(to, CREATE_FN, [rrefId, null, spec], options).catch((error: unknown) => entry.settle(undefined, error));
      return rref;
    }
    const state = this.newUser(rrefId, to, this.newId());
    state.supervision = supervision;
    const send = (callOptions: CallOptions, wantsValue = false) => this.host.call(to, CREATE_FN, [rrefId, state.forkId, spec, wantsValue], callOptions);
    let created: Promise<unknown>;
    if (after === undefined) {
      // Sent once the code that called remote() is done (a microtask), so that `remote()` + `toHere()` is one
      // exchange: the toHere() asks the creation to bring the value back. Anything this worker sends first (a
      // call, this RRef on the wire, its release) sends the creation before itself, so nothing overtakes it.
      created = this.launches.start(state, (wantsValue) => send(options, wantsValue)).result;
      state.creating = true;
    } else {
      // One timeout for the wait and the creation together.
      const budget = this.budget(options);
      created = budget.wait(after, () => `RRef ${rrefId}'s target being usable`).then(() => send(budget.rest(options)));
    }
    this.confirmWhen(state, created, true);
    return this.userHandle<T>(state);
  }

  /** An owner handle on `entry` (one more local reference). */
  private ownerHandle<T>(entry: OwnerEntry): RRef<T> {
    entry.localHandles++;
    const rref = new RRef<T>(this, entry.rrefId, this.selfName, undefined, entry);
    this.collected.register(rref, { kind: 'owner', entry, flag: rref.handle }, rref);
    return rref;
  }

  private newUser(rrefId: string, owner: string, forkId: string): UserState {
    const state: UserState = {
      rrefId,
      owner,
      forkId,
      confirmed: false,
      confirmation: Promise.resolve(),
      failure: undefined,
      released: false,
      pendingChildren: new Map(),
      handles: 0,
    };
    this.users.set(forkId, state);
    this.usersPerOwner.add(owner, 1);
    return state;
  }

  private forgetUser(state: UserState): void {
    if (this.users.get(state.forkId) !== state) return;
    this.users.delete(state.forkId);
    if (!state.released) this.usersPerOwner.add(state.owner, -1);
  }

  private userHandle<T>(state: UserState): RRef<T> {
    state.handles++;
    const rref = new RRef<T>(this, state.rrefId, state.owner, state, undefined);
    this.collected.register(rref, { kind: 'user', forkId: state.forkId, flag: rref.handle }, rref);
    return rref;
  }

  /** A new handle on `rref`'s value (owner) or fork (user), kept by its holder. */
  fork(rref: RRef<unknown>): RRef<unknown> {
    const handle = rref.entry ? this.ownerHandle(rref.entry) : this.userHandle(rref.user!);
    handle.handle.kept = true;
    return handle;
  }

  /** The budget of an operation with `options` (the agent's default timeout when none is given). */
  budget(options: CallOptions): Budget {
    return Budget.of(options, this.host.options.rpcTimeoutMs);
  }

  async waitReady(rref: RRef<unknown>, options: CallOptions): Promise<void> {
    const entry = rref.entry!;
    if (!entry.created) await this.budget(options).wait(entry.ready, () => `the creation of RRef ${rref.rrefId}`);
    if (entry.failure !== undefined) throw creationFailed(rref.rrefId, entry.failure);
  }

  /** Marks `state` confirmed when `acknowledged` resolves; on failure the RRef becomes unusable. */
  private confirmWhen(state: UserState, acknowledged: Promise<unknown>, isCreation: boolean): void {
    state.confirmation = acknowledged.then(
      () => {
        state.confirmed = true;
      },
      (error: unknown) => {
        state.failure = isCreation ? creationFailed(state.rrefId, error) : ownerLost(state, error);
        // A creation that failed or timed out must not leave a value behind on the owner.
        void this.sendDelete(state).catch(() => undefined);
      },
    );
  }

  // ---- using RRefs -----------------------------------------------------------

  async fetch(rref: RRef<unknown>, options: CallOptions): Promise<unknown> {
    const fetch = (rest: CallOptions) => this.onOwner(rref, rest, (last) => this.host.call(rref.ownerName(), FETCH_FN, [rref.rrefId], last), true);
    // A fetch changes nothing: it may always be retried.
    return this.retrying(rref, options, () => true, 'toHere()', fetch);
  }

  async callMethod(rref: RRef<unknown>, method: string, args: unknown[], options: CallOptions): Promise<unknown> {
    const call = (rest: CallOptions) => this.onOwner(rref, rest, (last) => this.host.call(rref.ownerName(), CALL_FN, [rref.rrefId, method, args], last));
    const fn = rref.user?.supervision?.spec.fn ?? '';
    return this.retrying(rref, options, () => isIdempotent(fn, method), `method '${method}' of class '${fn}'`, call);
  }

  /** Runs `use` of `rref`, again after its re-creation when asked to (`retries`) and `idempotent` (supervised.ts). */
  private retrying(rref: RRef<unknown>, options: CallOptions, idempotent: () => boolean, what: string, use: (rest: CallOptions) => Promise<unknown>): Promise<unknown> {
    if (retriesOf(options) === 0) return use(options);
    const user = rref.user;
    if (user?.supervision === undefined) {
      throw new InvalidArgumentError(`retries apply to the supervised RRefs this worker made (remote(to, Class, args, { maxRestarts })); RRef ${rref.rrefId} is not one`);
    }
    const { retries: _, ...once } = options;
    let generation = 0;
    return withRetries(options, this.budget(options), idempotent, what, (rest) => {
      generation = user.supervision!.generation;
      return use({ ...once, timeoutMs: rest.timeoutMs });
    }, () => backAfter(user, generation));
  }

  backward(rref: RRef<unknown>, contextId: string | undefined, retainGraph: boolean): Promise<void> {
    return rrefBackward(this.host, rref, contextId, retainGraph, (call) => this.onOwner(rref, {}, call));
  }

  remoteMethod(rref: RRef<unknown>, method: string, args: unknown[], options: CallOptions): RRef<unknown> {
    // The owner knows a user's value only once it confirmed the fork: it does not wait for ids it does not know.
    const user = rref.user;
    const after = user && !user.confirmed
      ? user.confirmation.then(() => {
          if (user.failure) throw user.failure;
        })
      : undefined;
    return this.create(rref.ownerName(), { target: rref.rrefId, method, args }, options, after);
  }

  /**
   * Runs a call to the owner once the RRef is usable, the wait and the call
   * within one timeout, turning the owner's disappearance into RREF_OWNER_LOST.
   */
  private async onOwner(rref: RRef<unknown>, options: CallOptions, call: (rest: CallOptions) => Promise<unknown>, readOnly = false): Promise<unknown> {
    this.host.checkRunning();
    rref.checkUsable();
    const user = rref.user;
    if (readOnly && user?.launch && !user.launch.wantsValue) return fetchWithCreation(this, user, user.launch, options);
    if (readOnly && user && !user.confirmed && user.creating) return fetchBehindCreation(this, user, options, call);
    let rest = options;
    // Nothing is sent before the RRef is usable: a use that timed out while waiting must not run later.
    if (user && !user.confirmed) {
      const budget = this.budget(options);
      await budget.wait(user.confirmation, () => `the creation or confirmation of RRef ${rref.rrefId}`);
      rref.checkUsable();
      rest = budget.rest(options);
    } else if (rref.entry && !rref.entry.created) {
      const budget = this.budget(options);
      await this.waitReady(rref, options);
      rref.checkUsable();
      rest = budget.rest(options);
    }
    return this.toOwner(user, rest, call);
  }

  /** Runs `call` on the owner, turning the owner's disappearance into RREF_OWNER_LOST. */
  async toOwner(user: UserState | undefined, rest: CallOptions, call: (rest: CallOptions) => Promise<unknown>): Promise<unknown> {
    try {
      return await call(rest);
    } catch (error) {
      // A supervised object's owner may come back: only this call fails (with its error), not the RRef.
      if (error instanceof WorkerUnavailableError && user && !user.supervision) {
        user.failure = ownerLost(user, error);
        throw user.failure;
      }
      throw error;
    }
  }

  // ---- releasing -------------------------------------------------------------

  async release(rref: RRef<unknown>): Promise<void> {
    if (rref.handle.released) return;
    rref.handle.released = true;
    this.collected.unregister(rref);
    if (rref.entry) {
      rref.entry.localHandles--;
      this.owners.collect(rref.entry);
      return;
    }
    const state = rref.user!;
    // The fork goes with its last handle (a fork() of it may still be held).
    if (--state.handles > 0) return;
    // The owner is told in the background (PyTorch's delete is asynchronous too): the delete is
    // acknowledged and retried like every RRef message, and shutdown waits for it.
    void this.releaseUser(state);
  }

  /**
   * What a call's end does to the RRefs it carried (see RRef.keep): those that
   * arrived in its arguments and those this worker returned in its result are
   * released, unless the function kept them.
   */
  releaseCallRefs(refs: unknown[]): void {
    for (const rref of refs) {
      if (!(rref instanceof RRef) || rref.manager !== this || rref.handle.kept) continue;
      void this.release(rref as RRef<unknown>).catch(() => undefined);
    }
  }

  /**
   * Resolves once every RRef among a call's arguments is usable here: a value
   * owned here exists (its creation failed: rejects with that failure), a
   * user fork is confirmed by its owner (or failed: its uses will say why).
   * Within `timeoutMs` (0 = no limit), else RpcTimeoutError.
   */
  async argumentsReady(refs: unknown[], timeoutMs: number, caller?: CallerIdentity): Promise<void> {
    const waits: Array<Promise<unknown>> = [];
    for (const rref of refs) {
      if (!(rref instanceof RRef) || rref.manager !== this) continue;
      if (rref.entry && !rref.entry.created) waits.push(rref.entry.ready);
      else if (rref.user && !rref.user.confirmed && rref.user.failure === undefined) waits.push(rref.user.confirmation);
    }
    if (waits.length > 0) await new Budget(timeoutMs, undefined).wait(Promise.all(waits), () => 'the RRefs among the arguments being usable');
    for (const rref of refs) {
      const entry = rref instanceof RRef && rref.manager === this ? rref.entry : undefined;
      if (entry === undefined) continue;
      if (entry.failure !== undefined) throw creationFailed(entry.rrefId, entry.failure);
      // An RRef handed back to its owner: only by a worker that holds a fork of it (a name is not a capability).
      if (caller !== undefined && !holdsAnyFork(entry, caller, this.host)) throw unknownRRef(this.selfName, entry.rrefId);
    }
  }

  private releaseUser(state: UserState): Promise<void> {
    if (!state.released) {
      state.launch?.go();
      state.released = true;
      releasedWhileAway(state);
      // Room for another fork from this owner at once (see read()); the delete follows.
      if (this.users.get(state.forkId) === state) this.usersPerOwner.add(state.owner, -1);
      state.deleting = this.deleteWhenDone(state).catch(() => undefined);
    }
    return state.deleting ?? Promise.resolve();
  }

  /** Once the fork is confirmed (or failed), tells its owner it is gone. */
  private async deleteWhenDone(state: UserState): Promise<void> {
    await state.confirmation;
    if (state.failure?.code === 'RREF_CREATION_FAILED' || (state.failure && !state.confirmed)) {
      // The failure path already told the owner to drop the fork.
      if (state.pendingChildren.size === 0) this.forgetUser(state);
      return;
    }
    // Also after RREF_OWNER_LOST: an owner declared failed may only have stalled, and still hold the value.
    await this.sendDelete(state).catch(() => undefined);
  }

  /** G2: waits for the children of `state`, then tells the owner this fork is gone (G1). */
  private async sendDelete(state: UserState): Promise<void> {
    while (state.pendingChildren.size > 0 && !!this.host.running) await new Promise((resolve) => setTimeout(resolve, 10));
    try {
      if (this.gone(state.owner)) this.owe(state.owner, state.rrefId, state.forkId);
      else await this.deletes.add(state.owner, [state.rrefId, state.forkId]);
    } catch (error) {
      if (this.gone(state.owner)) this.owe(state.owner, state.rrefId, state.forkId);
      throw error;
    } finally {
      this.forgetUser(state);
    }
  }

  /** The safety net for handles nobody released: the same as `release()`, when V8 collects them. */
  private onCollected(held: Held): void {
    if (held.flag.released) return;
    held.flag.released = true;
    if (held.kind === 'owner') {
      held.entry.localHandles--;
      this.owners.collect(held.entry);
      return;
    }
    const state = this.users.get(held.forkId);
    if (state && --state.handles <= 0) void this.releaseUser(state).catch(() => undefined);
  }

  /** Releases every user fork (on shutdown), waiting at most `timeoutMs`. */
  async releaseAll(timeoutMs: number): Promise<void> {
    const all = [...this.users.values()].map((state) => this.releaseUser(state).catch(() => undefined));
    await waitAtMost(Promise.all(all), timeoutMs);
  }

  /** Forgets everything (after shutdown). */
  clear(): void {
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    for (const timer of this.awaited.values()) clearTimeout(timer);
    this.awaited.clear();
    this.leaseTimer = undefined;
    this.owners.clear();
    this.users.clear();
    this.usersPerOwner.clear();
    this.owed.clear();
  }

  // ---- the wire: forks -------------------------------------------------------

  /** Encodes `rref` for `peer`, registering the fork it becomes. */
  write(rref: RRef<unknown>, context: WireContext | undefined): RRefWire {
    rref.checkUsable();
    rref.user?.launch?.go();
    const peer = context?.peer ?? '';
    const forkId = this.newId();
    if (rref.entry) this.owners.addPending(rref.entry, forkId, peer);
    else {
      const user = rref.user!;
      user.pendingChildren.set(forkId, peer);
      // The owner confirms the new holder only once this holder told it of the fork (an RRef handed to its owner is no fork).
      if (peer !== '' && peer !== user.owner) {
        void this.askOwner(user.owner, { k: FORKED, rrefId: user.rrefId, forkId, parentFork: user.forkId, holder: peer }).catch(() => undefined);
      }
    }
    return { o: rref.ownerName(), r: rref.rrefId, f: forkId, p: this.selfName };
  }

  /** Decodes an RRef that arrived; starts confirming its fork. */
  read(wire: RRefWire): RRef<unknown> {
    if (!wire || typeof wire.o !== 'string' || typeof wire.r !== 'string' || typeof wire.p !== 'string' || (wire.f !== null && typeof wire.f !== 'string')) {
      throw new SerializationError('malformed RRef on the wire');
    }
    if (wire.o === this.selfName) return this.readOwn(wire);
    const forkId = wire.f ?? this.newId();
    const existing = this.users.get(forkId);
    if (existing) return this.userHandle(existing);
    if (!isWireId(wire.r) || !isWireId(forkId) || !isWireId(wire.o) || !isWireId(wire.p)) throw new SerializationError('malformed RRef on the wire');
    // Each arriving RRef makes state here and messages to its owner: bounded per owner named.
    const limit = this.host.options.peerLimits.rrefsPerPeer;
    if (this.usersPerOwner.get(wire.o) >= limit) {
      // Refused one by one (the rest of the message still decodes): it arrives failed, and its owner and parent drop it.
      this.refuseFork(wire);
      const failure = new RRefError('RREF_LIMIT_EXCEEDED', `worker '${this.selfName}' already holds ${limit} RRefs owned by '${wire.o}' (peerLimits.rrefsPerPeer)`);
      const refused: UserState = { rrefId: wire.r, owner: wire.o, forkId, confirmed: false, confirmation: Promise.resolve(), failure, released: false, pendingChildren: new Map(), handles: 1 };
      return new RRef(this, wire.r, wire.o, refused, undefined);
    }
    const state = this.newUser(wire.r, wire.o, forkId);
    const acknowledged = this.sendFork(wire, forkId).then(() => {
      if (wire.p !== wire.o && wire.f) void sendReliably(this.sender, wire.p, { k: CHILD_ACCEPT, rrefId: wire.r, forkId }).catch(() => undefined);
    });
    this.confirmWhen(state, acknowledged, false);
    return this.userHandle(state);
  }

  /** Tells the owner this worker holds fork `forkId` (see {@link askOwner}). */
  private sendFork(wire: RRefWire, forkId: string): Promise<void> {
    return this.askOwner(wire.o, { k: FORK, rrefId: wire.r, forkId, holder: this.selfName, parent: wire.p });
  }

  /**
   * Sends a fork message to `owner`. The value may still be on its way to the
   * owner (its creator's `remote()` has not arrived yet), or the fork's parent
   * not have told it of the fork yet: the owner answers `unknown` at once,
   * keeping nothing, and this side asks again for at most FORK_WAIT_MS.
   */
  private async askOwner(owner: string, message: ControlMessage): Promise<void> {
    const deadline = Date.now() + FORK_WAIT_MS;
    for (let pause = 10; ; pause = Math.min(pause * 2, 250)) {
      const reply = (await sendReliably(this.sender, owner, message)) as { error?: WireError; unknown?: boolean } | undefined;
      if (!reply?.error) return;
      if (!reply.unknown || Date.now() + pause > deadline || !this.host.running) throw errorFromWire(reply.error);
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /**
   * A fork refused on arrival: the owner and the parent that sent it would
   * otherwise keep it pending until this worker leaves. Members only: an
   * unknown owner gets no messages from us.
   */
  private refuseFork(wire: RRefWire): void {
    if (!wire.f) return;
    if (isCurrentMember(this.host, wire.o)) void this.deletes.add(wire.o, [wire.r, wire.f]).catch(() => undefined);
    if (wire.p !== wire.o && isCurrentMember(this.host, wire.p)) void sendReliably(this.sender, wire.p, { k: CHILD_ACCEPT, rrefId: wire.r, forkId: wire.f }).catch(() => undefined);
  }

  /** An RRef to a value of ours came back: an owner handle, and the fork it was is settled. */
  private readOwn(wire: RRefWire): RRef<unknown> {
    const entry = this.owners.get(wire.r) ?? this.awaitCreation(wire);
    const rref = this.ownerHandle(entry);
    if (wire.f) {
      if (wire.p === this.selfName) this.owners.deleteFork(wire.r, wire.f);
      else void sendReliably(this.sender, wire.p, { k: CHILD_ACCEPT, rrefId: wire.r, forkId: wire.f }).catch(() => undefined);
    }
    return rref;
  }

  /**
   * An RRef of ours whose value we do not know arrived. Its creation may
   * still be on its way (it was sent after a confirmation, or overtaken by a
   * smaller message): an entry awaits it for at most FORK_WAIT_MS, and the
   * call carrying the RRef waits for it (readiness). Bounded (AWAITED_MAX at
   * once); an id that was never made, or was dropped, fails that way.
   */
  private awaitCreation(wire: RRefWire): OwnerEntry {
    const dropped = () => new RRefError('RREF_OWNER_LOST', `RRef ${String(wire.r).slice(0, 64)} came back to its owner '${this.selfName}', which holds no such value (dropped, or never made)`);
    if (!wire.f || !isWireId(wire.r) || !isWireId(wire.f) || this.awaited.size >= AWAITED_MAX || !this.host.running) throw dropped();
    const entry = this.owners.open(wire.r);
    entry.awaitingCreation = true;
    const timer = setTimeout(() => {
      this.awaited.delete(entry);
      if (!entry.awaitingCreation) return;
      entry.awaitingCreation = false;
      // A creation arriving later must not revive the forks deleted meanwhile.
      for (const forkId of entry.deleted) this.tombstone(`${entry.rrefId}|${forkId}`);
      entry.settle(undefined, dropped());
    }, FORK_WAIT_MS);
    unrefTimer(timer);
    this.awaited.set(entry, timer);
    return entry;
  }

  // ---- control handlers ------------------------------------------------------

  /**
   * A user forked its fork on (parent -> owner): the owner expects the new
   * holder's confirmation. Only a worker that holds the parent fork may.
   */
  private onForked(m: ControlMessage, sender: CallerIdentity | undefined): unknown {
    const { rrefId, forkId, parentFork, holder } = m as { rrefId?: unknown; forkId?: unknown; parentFork?: unknown; holder?: unknown };
    if (!isWireId(rrefId) || !isWireId(forkId) || !isWireId(parentFork) || !isWireId(holder)) return { error: { name: 'RRefError', code: 'RREF_OWNER_LOST', message: 'malformed fork' } };
    const entry = this.owners.get(rrefId);
    // Not known (yet): the value or the parent's own fork may still be on its way; nothing is kept.
    if (!entry || !holdsFork(entry, parentFork, sender, this.host)) return this.unknownFork(rrefId);
    try {
      if (!entry.users.has(forkId) && !entry.deleted.has(forkId)) this.owners.addPending(entry, forkId, holder);
    } catch (error) {
      return { error: errorToWire(error) };
    }
    return { ok: true };
  }

  /**
   * A holder confirms its fork (child -> owner): registered under the name its
   * message showed, and only when the owner sent it that fork or its parent
   * said so (onForked); anything else is answered as an unknown fork.
   */
  private onFork(m: ControlMessage, sender: CallerIdentity | undefined): unknown {
    const { rrefId, forkId } = m as { rrefId?: unknown; forkId?: unknown };
    if (!isWireId(rrefId) || !isWireId(forkId)) return { error: { name: 'RRefError', code: 'RREF_OWNER_LOST', message: 'malformed fork' } };
    const entry = this.owners.get(rrefId);
    // Unknown now: answered at once, nothing kept (the holder asks again while a creation or its parent's word may be on its way).
    if (!entry || sender === undefined || !holdsFork(entry, forkId, sender, this.host)) return this.unknownFork(rrefId);
    try {
      this.owners.confirmUser(entry, forkId, holderName(sender));
    } catch (error) {
      return { error: errorToWire(error) };
    }
    return { ok: true };
  }

  private unknownFork(rrefId: string): unknown {
    return { unknown: true, error: errorToWire(unknownRRef(this.selfName, rrefId)) };
  }

  private onChildAccept(m: ControlMessage): unknown {
    const { forkId } = m as { forkId?: unknown };
    if (!isWireId(forkId)) return { ok: false };
    for (const state of this.users.values()) state.pendingChildren.delete(forkId);
    return { ok: true };
  }

  /**
   * Forks a user let go of (a batch, see delete-batches.ts): each is dropped
   * when the sender holds it; a fork of a value not known yet is tombstoned
   * when the sender is the value's creator (its creation failed or timed out).
   */
  private onDelete(m: ControlMessage, sender: CallerIdentity | undefined): unknown {
    const { forks } = m as { forks?: unknown };
    if (!Array.isArray(forks) || forks.length > DELETE_BATCH_MAX) return { ok: false };
    for (const fork of forks) {
      const [rrefId, forkId] = Array.isArray(fork) ? (fork as unknown[]) : [];
      if (!isWireId(rrefId) || !isWireId(forkId)) continue;
      const entry = this.owners.get(rrefId);
      if (!entry) {
        if (isExpectedHolder(rrefId.slice(0, rrefId.lastIndexOf('.')), sender, this.host)) this.tombstone(`${rrefId}|${forkId}`);
      } else if (holdsFork(entry, forkId, sender, this.host)) this.owners.deleteFork(rrefId, forkId);
    }
    return { ok: true };
  }

  private onWorkerGone(name: string, reason: 'left' | 'failed'): void {
    this.owners.dropHolder(name);
    for (const state of this.users.values()) {
      for (const [forkId, holder] of state.pendingChildren) if (holder === name) state.pendingChildren.delete(forkId);
      if (state.owner !== name || state.failure) continue;
      state.failure = ownerGone(state, reason);
      if (state.failure) {
        // Uses waiting for a re-creation that will not come fail now.
        state.supervision?.back?.resolve();
        wakeWaiters(state);
      }
    }
  }

  /** A new incarnation of `name` joined: the supervised objects it owned are made there again (supervised.ts). */
  private onRejoined(name: string): void {
    for (const state of this.users.values()) {
      if (state.owner !== name || state.supervision?.back === undefined) continue;
      // After the other subscribers to rejoined$ (shutdown's call counts start from zero for the new incarnation).
      setImmediate(() => {
        const made = recreate(state, (spec) => this.host.call(name, CREATE_FN, [state.rrefId, state.forkId, spec], {}));
        // Released while it was being made: the new owner drops it.
        void made.then((unwanted) => (unwanted ? this.deletes.add(name, [state.rrefId, state.forkId]).then(() => undefined) : undefined)).catch(() => undefined);
      });
    }
  }

  // ---- helpers for the owner-side functions ----------------------------------

  /** Opens the entry a `remote()` call creates, unless it was deleted before it arrived. */
  /**
   * Opens the value of a creation request from `creator`; its user fork is
   * held by `holder` (the creator, or the name an unverified caller's state is
   * kept under: see accountableName).
   */
  openForCreation(rrefId: string, forkId: string | null, creator: string, holder = creator): OwnerEntry | undefined {
    // Ids are made by their creator, prefixed with its name: nobody can take another worker's id.
    if (!isWireId(rrefId) || !rrefId.startsWith(`${creator}.`) || (forkId !== null && !isWireId(forkId))) {
      throw new RRefError('RREF_CREATION_FAILED', `malformed RRef creation request from '${creator}'`);
    }
    if (forkId !== null && this.tombstones.has(`${rrefId}|${forkId}`)) return undefined;
    const existing = this.owners.get(rrefId);
    if (existing?.awaitingCreation && forkId !== null) {
      // An RRef of this value arrived first and waits for it: this creation makes it.
      this.owners.adopt(existing, forkId, holder);
      clearTimeout(this.awaited.get(existing));
      this.awaited.delete(existing);
      return existing;
    }
    if (existing) return existing.created || forkId !== null ? undefined : existing;
    if (forkId === null) return undefined;
    this.owners.checkRoom(holder, 'value');
    const opened = this.owners.open(rrefId, holder);
    this.owners.confirmUser(opened, forkId, holder);
    return opened;
  }

  /** Keeps a delete for `owner`, declared failed, in case it comes back. */
  private owe(owner: string, rrefId: string, forkId: string): void {
    let set = this.owed.get(owner);
    if (!set) this.owed.set(owner, (set = new RecentSet(OWED_PER_OWNER)));
    set.add(`${rrefId}|${forkId}`);
  }

  /** Owners declared failed that are back (a stall, not a death) get the deletes kept for them. */
  private onMembers(members: WorkerInfo[]): void {
    if (this.owed.size === 0) return;
    for (const { name } of members) {
      const set = this.owed.get(name);
      if (!set) continue;
      this.owed.delete(name);
      for (const key of set) {
        const bar = key.lastIndexOf('|');
        void this.deletes.add(name, [key.slice(0, bar), key.slice(bar + 1)]).catch(() => undefined);
      }
    }
  }

  /** Forks held by callers that are not current members expire once their value sat unused for `leaseMs`. */
  private expireLeases(): void {
    const { leaseMs } = this.host.options.peerLimits;
    const now = Date.now();
    this.owners.dropHolders((holder, entry) => now - entry.lastUsed > leaseMs && !isCurrentMember(this.host, holder));
  }

  private tombstone(key: string): void {
    this.tombstones.add(key);
  }

  private gone(worker: string): boolean {
    return this.host.members.departure(worker) !== undefined;
  }
}
