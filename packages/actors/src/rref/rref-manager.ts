/**
 * One worker's RRefs: the values it owns, the user forks it holds, and the
 * protocol between them (fork, child accept, delete), with the guarantees of
 * PyTorch's RRef design: the owner learns of every user deletion (G1), and a
 * parent keeps its reference until its child is confirmed by the owner (G2).
 * Beyond PyTorch, a user that dies loses its forks on its owners, and an owner
 * that dies fails its RRefs' uses with RREF_OWNER_LOST. This file makes RRefs,
 * encodes and decodes them, releases them and dispatches the control messages;
 * the owner's side is in owner-side.ts, the forks held here in user-forks.ts,
 * the uses that run on the owner in owner-calls.ts. See docs/rref.md.
 * @module
 */
import { InvalidArgumentError, RRefError, SerializationError } from '@tensorbus/core';
import { errorFromWire, errorToWire, waitAtMost, type WireError } from '@tensorbus/core/internal';
import type { CallerIdentity } from '../agent/call-context.js';
import type { ControlMessage } from '../agent/control.js';
import type { CallRequest } from '../agent/call-protocol.js';
import type { AgentHost, CallOptions, PluginLifecycle, WireContext } from '../agent/host.js';
import type { WorkerInfo } from '../worker-info.js';
import { isCurrentMember, isWireId, leaseTimer } from '../peer-limits.js';
import { randomIdPart } from '../random-id.js';
import { markOpaque } from './held-tensors.js';
import { holdsAnyFork, unknownRRef } from './holders.js';
import { OwnerTable, type OwnerEntry } from './owner-table.js';
import { sendReliably, type ReliableSender } from './reliable.js';
import { DeleteBatches } from './delete-batches.js';
import { CHILD_ACCEPT, CREATE_FN, DELETE, FORK, FORKED, readRRefMessage, RREF_CONTROL_KINDS, type CreateSpec, type ForkedMessage, type ForkMessage, type RRefWire } from './rref-protocol.js';
import { creationFailed, ownerLost, RRef, type HandleState, type RRefHost, type RRefStats, type UserState } from './rref.js';

export type { RRefStats } from './rref.js';
import { Budget } from './bounded-wait.js';
import { CreationLaunches } from './creation-launch.js';
import { checkpointKey } from './object-checkpoints.js';
import { maxRestartsOf, retriesOf, supervise, type RemoteOptions } from './supervised.js';
import { FORK_WAIT_MS, OwnerSide } from './owner-side.js';
import { UserForks } from './user-forks.js';
import { OwnerCalls } from './owner-calls.js';

type Held = { kind: 'user'; forkId: string; flag: HandleState } | { kind: 'owner'; entry: OwnerEntry; flag: HandleState };

/** The RRef side of one agent. */
export class RRefManager implements RRefHost, PluginLifecycle {
  readonly owners: OwnerTable;
  /** The owner side of the protocol (owner-side.ts). */
  private readonly ownerSide: OwnerSide;
  /** The user forks held here (user-forks.ts). */
  private readonly users: UserForks;
  /** The uses of RRefs that run on their owners (owner-calls.ts). */
  private readonly calls: OwnerCalls;
  private readonly collected = new FinalizationRegistry<Held>((held) => this.onCollected(held));
  private leaseTimer: NodeJS.Timeout | undefined;

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
    this.ownerSide = new OwnerSide(host, this.owners);
    this.users = new UserForks(host, this.deletes);
    this.calls = new OwnerCalls(host);
    // A value referencing the worker must not make everything it holds look like its own.
    markOpaque(host);
    markOpaque(this);
    // The protocol's control messages (rref-protocol.ts), all read and dispatched by onMessage.
    for (const kind of RREF_CONTROL_KINDS) host.onControl(kind, (raw, sender) => this.onMessage(raw, sender));
    // A call leaving this worker goes after the creations remote() made before it.
    host.tapCalls(() => {
      if (this.launches.pending) this.launches.sendAll();
      return undefined;
    });
    // Calls wait for their RRef arguments to be usable, and let go of the RRefs they carried when they settle.
    host.serveReferences({
      ready: (received, caller, request) => this.argumentsReady(received, host.options.rpcTimeoutMs, caller, request),
      settled: (references, request) => this.releaseCallRefs(references, request),
    });
    this.sender = {
      request: (worker, message, timeoutMs) => host.requestControl(worker, message, timeoutMs),
      gone: (worker) => host.members.departure(worker) !== undefined,
      stopped: () => !host.running,
    };
    host.members.gone$.subscribe(({ name, reason }) => {
      this.owners.dropHolder(name);
      this.users.workerGone(name, reason);
    });
    host.members.rejoined$.subscribe((name) => this.users.rejoined(name));
    host.members.membership$.subscribe((members) => this.users.sendOwed(members));
    this.leaseTimer = leaseTimer(host.options.peerLimits.leaseMs, () => this.ownerSide.expireLeases());
  }

  get selfName(): string {
    return this.host.name;
  }

  /**
   * The one dispatch of the protocol's control messages: checked where they
   * enter (readRRefMessage), refused as `{ ok: false, error }` when malformed
   * (nothing changes), else handled by their kind.
   */
  private onMessage(raw: ControlMessage, sender: CallerIdentity | undefined): unknown {
    const message = readRRefMessage(raw);
    if (message instanceof Error) return { ok: false, error: errorToWire(message) };
    switch (message.k) {
      case FORKED:
        return this.ownerSide.onForked(message, sender);
      case FORK:
        return this.ownerSide.onFork(message, sender);
      case CHILD_ACCEPT:
        this.users.childAccepted(message.forkId);
        return { ok: true };
      case DELETE:
        return this.ownerSide.onDelete(message, sender);
      default: {
        const _exhaustive: never = message;
        return _exhaustive;
      }
    }
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
    const { users, pendingChildren } = this.users.counts();
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
    const state = this.users.add(rrefId, to, this.newId());
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

  /** Marks `state` confirmed when `acknowledged` resolves; on failure the RRef becomes unusable. */
  private confirmWhen(state: UserState, acknowledged: Promise<unknown>, isCreation: boolean): void {
    state.confirmation = acknowledged.then(
      () => {
        state.confirmed = true;
      },
      (error: unknown) => {
        state.failure = isCreation ? creationFailed(state.rrefId, error) : ownerLost(state, error);
        // A creation that failed or timed out must not leave a value behind on the owner.
        void this.users.sendDelete(state).catch(() => undefined);
      },
    );
  }

  // ---- using RRefs (owner-calls.ts) -----------------------------------------

  /** The budget of an operation with `options` (the agent's default timeout when none is given). */
  budget(options: CallOptions): Budget {
    return this.calls.budget(options);
  }

  waitReady(rref: RRef<unknown>, options: CallOptions): Promise<void> {
    return this.calls.waitReady(rref, options);
  }

  fetch(rref: RRef<unknown>, options: CallOptions): Promise<unknown> {
    return this.calls.fetch(rref, options);
  }

  callMethod(rref: RRef<unknown>, method: string, args: unknown[], options: CallOptions): Promise<unknown> {
    return this.calls.callMethod(rref, method, args, options);
  }

  backward(rref: RRef<unknown>, contextId: string | undefined, retainGraph: boolean): Promise<void> {
    return this.calls.backward(rref, contextId, retainGraph);
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
    void this.users.release(state);
  }

  /**
   * What a call's end does to the RRefs it carried (see RRef.keep): those that
   * arrived in its arguments and those this worker returned in its result are
   * released, unless the function kept them.
   */
  releaseCallRefs(refs: unknown[], request?: CallRequest): void {
    if (request?.fn === CREATE_FN) this.ownerSide.abandonArrival(request.args, request.meta);
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
  async argumentsReady(refs: unknown[], timeoutMs: number, caller?: CallerIdentity, request?: CallRequest): Promise<void> {
    // A creation's value is known from its arrival: forks of it are confirmed while its arguments become usable.
    if (request?.fn === CREATE_FN && caller !== undefined) this.ownerSide.openOnArrival(request.args, caller, request.meta);
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
    if (state && --state.handles <= 0) void this.users.release(state).catch(() => undefined);
  }

  /** Releases every user fork (on shutdown), waiting at most `timeoutMs`. */
  async releaseAll(timeoutMs: number): Promise<void> {
    await waitAtMost(this.users.releaseAll(), timeoutMs);
  }

  /** Forgets everything (after shutdown). */
  clear(): void {
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    this.ownerSide.clear();
    this.leaseTimer = undefined;
    this.owners.clear();
    this.users.clear();
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
    if (this.users.heldFrom(wire.o) >= limit) {
      // Refused one by one (the rest of the message still decodes): it arrives failed, and its owner and parent drop it.
      this.refuseFork(wire);
      const failure = new RRefError('RREF_LIMIT_EXCEEDED', `worker '${this.selfName}' already holds ${limit} RRefs owned by '${wire.o}' (peerLimits.rrefsPerPeer)`);
      const refused: UserState = { rrefId: wire.r, owner: wire.o, forkId, confirmed: false, confirmation: Promise.resolve(), failure, released: false, pendingChildren: new Map(), handles: 1 };
      return new RRef(this, wire.r, wire.o, refused, undefined);
    }
    const state = this.users.add(wire.r, wire.o, forkId);
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
  private async askOwner(owner: string, message: ForkMessage | ForkedMessage): Promise<void> {
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
    const entry = this.owners.get(wire.r) ?? this.ownerSide.awaitCreation(wire);
    const rref = this.ownerHandle(entry);
    if (wire.f) {
      if (wire.p === this.selfName) this.owners.deleteFork(wire.r, wire.f);
      else void sendReliably(this.sender, wire.p, { k: CHILD_ACCEPT, rrefId: wire.r, forkId: wire.f }).catch(() => undefined);
    }
    return rref;
  }

  /** Opens the value of a creation request (see OwnerSide.openForCreation). */
  openForCreation(rrefId: string, forkId: string | null, creator: string, holder = creator, request?: object): OwnerEntry | undefined {
    return this.ownerSide.openForCreation(rrefId, forkId, creator, holder, request);
  }
}
