/**
 * The owner's side: the values this worker owns, and who refers to them. A
 * value is kept while any user fork (confirmed or pending) or any local owner
 * handle refers to it, and dropped (its tensors disposed, tf.Variables
 * excepted) once none does.
 * @module
 */
import { RRefError, tf } from '@tensorbus/core';
import { forEachTensor } from '../tensors.js';

/** One value owned here. */
export interface OwnerEntry {
  rrefId: string;
  /** Settles once the value exists (or its creation failed). */
  ready: Promise<void>;
  value: unknown;
  failure: unknown;
  created: boolean;
  /** Confirmed user forks: forkId -> holder worker. */
  users: Map<string, string>;
  /** Forks sent by this owner, not yet confirmed by their holder: forkId -> holder. */
  pendingUsers: Map<string, string>;
  /** Forks already deleted (a late duplicate must not revive them). */
  deleted: Set<string>;
  /** Owner handles (RRef objects) on this worker. */
  localHandles: number;
  /** Gives the value (or the failure to make it), once. */
  settle(value: unknown, failure?: unknown): void;
}

/** The values this worker owns. */
export class OwnerTable {
  private readonly entries = new Map<string, OwnerEntry>();

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

  /** The entry, or RRefError when this worker holds no such value. */
  require(rrefId: string, owner: string): OwnerEntry {
    const entry = this.entries.get(rrefId);
    if (!entry) throw new RRefError('RREF_OWNER_LOST', `worker '${owner}' no longer holds RRef ${rrefId} (it was released, or its creation failed or timed out)`);
    return entry;
  }

  /** Creates the entry for a value being made; `settle` gives it its value or failure. */
  open(rrefId: string): OwnerEntry {
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
      settle: (value, failure) => {
        if (entry.created) return;
        entry.created = true;
        if (failure !== undefined) entry.failure = failure;
        else entry.value = keepTensors(value);
        resolve();
        this.collect(entry);
      },
    };
    this.entries.set(rrefId, entry);
    return entry;
  }

  /** Adds a confirmed user fork (idempotent; a deleted fork stays deleted). */
  confirmUser(entry: OwnerEntry, forkId: string, holder: string): void {
    entry.pendingUsers.delete(forkId);
    if (!entry.deleted.has(forkId)) entry.users.set(forkId, holder);
  }

  /** Removes a fork, confirmed or pending (idempotent), and drops the value if nobody is left. */
  deleteFork(rrefId: string, forkId: string): void {
    const entry = this.entries.get(rrefId);
    if (!entry) return;
    entry.deleted.add(forkId);
    entry.users.delete(forkId);
    entry.pendingUsers.delete(forkId);
    this.collect(entry);
  }

  /** Drops every fork held by `worker` (it left or failed). */
  dropHolder(worker: string): void {
    for (const entry of [...this.entries.values()]) {
      for (const [forkId, holder] of [...entry.users, ...entry.pendingUsers]) {
        if (holder === worker) {
          entry.users.delete(forkId);
          entry.pendingUsers.delete(forkId);
          entry.deleted.add(forkId);
        }
      }
      this.collect(entry);
    }
  }

  /** Drops the entry once nothing refers to it. */
  collect(entry: OwnerEntry): void {
    if (!entry.created || entry.users.size > 0 || entry.pendingUsers.size > 0 || entry.localHandles > 0) return;
    if (this.entries.get(entry.rrefId) !== entry) return;
    this.entries.delete(entry.rrefId);
    disposeKept(entry.value);
  }

  /** Drops everything (shutdown). */
  clear(): void {
    for (const entry of this.entries.values()) disposeKept(entry.value);
    this.entries.clear();
  }
}

/** Marks the tensors of a kept value so calls that return them do not dispose them. */
function keepTensors(value: unknown): unknown {
  forEachTensor(value, (tensor) => {
    if (!tensor.isDisposed) tf.keep(tensor);
  });
  return value;
}

/** Disposes the tensors of a dropped value, except variables: model state lives until disposed explicitly (as in calls). */
function disposeKept(value: unknown): void {
  forEachTensor(value, (tensor) => {
    if (!tensor.isDisposed && !(tensor instanceof tf.Variable)) tensor.dispose();
  });
}
