/**
 * The owner's side: the values this worker owns, and who refers to them. A
 * value is kept while any user fork (confirmed or pending) or any local owner
 * handle refers to it, and dropped once none does: its tensors are disposed
 * unless another kept value still holds them; `tf.Variable`s only when the
 * value is an instance this worker constructed for `remote(to, Class)` (its
 * variables are its own), whose `dispose()` is called first.
 *
 * Every fork is counted against its holder and every value's tensor bytes
 * against the peer that created it, within the agent's {@link PeerLimits}.
 * @module
 */
import { RRefError, tf } from '@tensorbus/core';
import { PeerCounter, tensorBytes, type PeerLimits } from '../peer-limits.js';
import { madeByCurrentCall } from '../agent/call-tensors.js';
import { callDispose, heldTensors } from './held-tensors.js';

type Tensor = tf.Tensor;

/**
 * A tensor no kept value holds any more (a method replaced or dropped it):
 * no longer kept, it ends with the call that let it go, unless that call
 * returns it (then it goes once sent) or keeps it otherwise. Variables stay
 * their owner's.
 */
function letGo(tensor: Tensor): void {
  if (tensor.isDisposed || tensor instanceof tf.Variable) return;
  tensor.kept = false;
  madeByCurrentCall(tensor);
}

/** One value owned here. */
export interface OwnerEntry {
  rrefId: string;
  /** Settles once the value exists (or its creation failed). */
  ready: Promise<void>;
  value: unknown;
  failure: unknown;
  created: boolean;
  /** Confirmed user forks: forkId -> holder (its accountable name: the only caller served this value for it, holders.ts). */
  users: Map<string, string>;
  /**
   * Forks sent by this owner, or passed on by a holder that told it so
   * (`rref.forked`), not yet confirmed by their holder: forkId -> the name it
   * was sent to (only that worker may confirm it: holders.ts).
   */
  pendingUsers: Map<string, string>;
  /** Forks already deleted (a late duplicate must not revive them). */
  deleted: Set<string>;
  /** Owner handles (RRef objects) on this worker. */
  localHandles: number;
  /** The peer whose call created the value (its tensor bytes count against it); undefined when made here. */
  creator: string | undefined;
  /** A supervised object (supervised.ts): its state is saved after each method call when its class says how. */
  supervised?: boolean;
  /** The value is an instance constructed here for a remote creator: its variables are its own. */
  ownsVariables: boolean;
  /** Call the value's `dispose()` when it is dropped (implied by `ownsVariables`). */
  callsDispose: boolean;
  /** The tensors the value held when last looked at. */
  tensors: Set<Tensor>;
  /** Bytes of those tensors, charged to `creator`. */
  bytes: number;
  /** Last time a peer used or forked this value (Date.now()), for leases. */
  lastUsed: number;
  /**
   * Opened for an RRef that reached its owner before the call creating its
   * value did (a `rref.remote().m()` result, a large creation overtaken):
   * the creation, when it arrives, fills this entry instead of opening one.
   */
  awaitingCreation: boolean;
  /** Gives the value (or the failure to make it), once. */
  settle(value: unknown, failure?: unknown): void;
}

/** The values this worker owns. */
export class OwnerTable {
  private readonly entries = new Map<string, OwnerEntry>();
  /** How many kept values hold each tensor (a tensor two values share is freed with the last). */
  private readonly holders = new Map<Tensor, number>();
  /** Forks (confirmed or pending) per holder. */
  private readonly forks = new PeerCounter();
  /** Tensor bytes per creator. */
  private readonly bytes = new PeerCounter();

  constructor(
    private readonly self: string,
    private readonly limits: () => PeerLimits,
    /** Told of each entry dropped because nothing refers to it any more. */
    private readonly dropped: (entry: OwnerEntry) => void = () => undefined,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get pendingUsers(): number {
    let n = 0;
    for (const entry of this.entries.values()) n += entry.pendingUsers.size;
    return n;
  }

  get(rrefId: string): OwnerEntry | undefined {
    return this.entries.get(rrefId);
  }

  values(): IterableIterator<OwnerEntry> {
    return this.entries.values();
  }

  /** The entry, or RRefError when this worker holds no such value. */
  require(rrefId: string, owner: string): OwnerEntry {
    const entry = this.entries.get(rrefId);
    if (!entry) throw new RRefError('RREF_OWNER_LOST', `worker '${owner}' no longer holds RRef ${rrefId} (it was released, or its creation failed or timed out)`);
    return entry;
  }

  /** Refuses a new value or fork for `peer` once it holds its bound of forks or bytes. */
  checkRoom(peer: string, what: 'fork' | 'value'): void {
    if (peer === this.self) return;
    const limits = this.limits();
    if (this.forks.get(peer) >= limits.rrefsPerPeer) {
      throw new RRefError('RREF_LIMIT_EXCEEDED', `worker '${peer}' holds ${limits.rrefsPerPeer} RRefs on worker '${this.self}' (peerLimits.rrefsPerPeer): release some first`);
    }
    if (what === 'value' && this.bytes.get(peer) >= limits.rrefBytesPerPeer) {
      throw new RRefError('RREF_LIMIT_EXCEEDED', `values created by worker '${peer}' hold ${this.bytes.get(peer)} bytes of tensors on worker '${this.self}' (peerLimits.rrefBytesPerPeer ${limits.rrefBytesPerPeer}): release some first`);
    }
  }

  /** Creates the entry for a value being made; `settle` gives it its value or failure. */
  open(rrefId: string, creator?: string): OwnerEntry {
    let resolve!: () => void;
    const entry: OwnerEntry = {
      rrefId,
      ready: new Promise<void>((r) => (resolve = r)),
      value: undefined,
      failure: undefined,
      created: false,
      users: new Map(),
      pendingUsers: new Map(),
      deleted: new Set(),
      localHandles: 0,
      creator: creator === this.self ? undefined : creator,
      ownsVariables: false,
      callsDispose: false,
      tensors: new Set(),
      bytes: 0,
      lastUsed: Date.now(),
      awaitingCreation: false,
      settle: (value, failure) => {
        if (entry.created) return;
        entry.created = true;
        if (failure !== undefined) entry.failure = failure;
        else {
          entry.value = value;
          this.rescan(entry);
          if (entry.creator !== undefined && this.bytes.get(entry.creator) > this.limits().rrefBytesPerPeer) {
            // Over the creator's bound: the value is freed and the RRef fails instead.
            this.free(entry);
            entry.value = undefined;
            entry.failure = new RRefError('RREF_LIMIT_EXCEEDED', `values created by worker '${entry.creator}' would hold more than ${this.limits().rrefBytesPerPeer} bytes of tensors on worker '${this.self}' (peerLimits.rrefBytesPerPeer)`);
          }
        }
        resolve();
        this.collect(entry);
      },
    };
    this.entries.set(rrefId, entry);
    return entry;
  }

  /** A creation from `holder` arrives for an entry opened while awaiting it: the entry becomes its value's. */
  adopt(entry: OwnerEntry, forkId: string, holder: string): void {
    this.checkRoom(holder, 'value');
    entry.awaitingCreation = false;
    entry.creator = holder === this.self ? undefined : holder;
    this.confirmUser(entry, forkId, holder);
  }

  /** Looks at the value's tensors again (after a method ran on it): new ones are kept and counted. */
  rescan(entry: OwnerEntry): void {
    if (!entry.created || entry.failure !== undefined) return;
    const now = heldTensors(entry.value);
    let bytes = 0;
    for (const tensor of now) {
      bytes += tensorBytes(tensor);
      if (entry.tensors.has(tensor)) continue;
      this.holders.set(tensor, (this.holders.get(tensor) ?? 0) + 1);
      // Kept so a call returning it (toHere, a getter method) does not dispose it.
      tf.keep(tensor);
    }
    for (const tensor of entry.tensors) if (!now.has(tensor) && this.unhold(tensor) === 0) letGo(tensor);
    entry.tensors = now;
    if (entry.creator !== undefined) this.bytes.add(entry.creator, bytes - entry.bytes);
    entry.bytes = bytes;
  }

  /** Registers a fork this owner sends to `holder`. */
  addPending(entry: OwnerEntry, forkId: string, holder: string): void {
    this.checkRoom(holder, 'fork');
    if (!entry.pendingUsers.has(forkId) && !entry.users.has(forkId)) this.forks.add(holder, 1);
    entry.pendingUsers.set(forkId, holder);
  }

  /** Adds a confirmed user fork (idempotent; a deleted fork stays deleted). */
  confirmUser(entry: OwnerEntry, forkId: string, holder: string): void {
    if (entry.deleted.has(forkId) || entry.users.has(forkId)) return;
    const pendingHolder = entry.pendingUsers.get(forkId);
    if (pendingHolder === undefined) {
      this.checkRoom(holder, 'fork');
      this.forks.add(holder, 1);
    } else if (pendingHolder !== holder) {
      this.forks.add(pendingHolder, -1);
      this.forks.add(holder, 1);
    }
    entry.pendingUsers.delete(forkId);
    entry.users.set(forkId, holder);
    entry.lastUsed = Date.now();
  }

  /** Removes a fork, confirmed or pending (idempotent), and drops the value if nobody is left. */
  deleteFork(rrefId: string, forkId: string): void {
    const entry = this.entries.get(rrefId);
    if (!entry) return;
    this.removeFork(entry, forkId);
    this.collect(entry);
  }

  private removeFork(entry: OwnerEntry, forkId: string): void {
    entry.deleted.add(forkId);
    const holder = entry.users.get(forkId) ?? entry.pendingUsers.get(forkId);
    if (holder !== undefined) this.forks.add(holder, -1);
    entry.users.delete(forkId);
    entry.pendingUsers.delete(forkId);
  }

  /** Drops every fork held by a worker `matches` (it left or failed, or its lease ran out). */
  dropHolders(matches: (holder: string, entry: OwnerEntry) => boolean): void {
    for (const entry of [...this.entries.values()]) {
      for (const [forkId, holder] of [...entry.users, ...entry.pendingUsers]) if (matches(holder, entry)) this.removeFork(entry, forkId);
      this.collect(entry);
    }
  }

  /** Drops every fork held by `worker` (it left or failed). */
  dropHolder(worker: string): void {
    this.dropHolders((holder) => holder === worker);
  }

  /** Drops the entry once nothing refers to it. */
  collect(entry: OwnerEntry): void {
    if (!entry.created || entry.users.size > 0 || entry.pendingUsers.size > 0 || entry.localHandles > 0) return;
    if (this.entries.get(entry.rrefId) !== entry) return;
    this.entries.delete(entry.rrefId);
    this.rescan(entry);
    this.free(entry);
    this.dropped(entry);
  }

  /** Drops everything (shutdown). */
  clear(): void {
    for (const entry of this.entries.values()) this.free(entry);
    this.entries.clear();
    this.holders.clear();
    this.forks.clear();
    this.bytes.clear();
  }

  /** Frees what the value holds (see the module comment). */
  private free(entry: OwnerEntry): void {
    if (entry.ownsVariables || entry.callsDispose) callDispose(entry.value);
    for (const tensor of entry.tensors) {
      if (this.unhold(tensor) > 0 || tensor.isDisposed) continue;
      if (tensor instanceof tf.Variable && !entry.ownsVariables) continue;
      tensor.dispose();
    }
    entry.tensors = new Set();
    if (entry.creator !== undefined) this.bytes.add(entry.creator, -entry.bytes);
    entry.bytes = 0;
  }

  /** One holder fewer for `tensor`; returns how many are left. */
  private unhold(tensor: Tensor): number {
    const left = (this.holders.get(tensor) ?? 1) - 1;
    if (left <= 0) this.holders.delete(tensor);
    else this.holders.set(tensor, left);
    return left;
  }
}
