/**
 * The user forks one worker holds: their states, their per-owner count, and
 * their release (G2: a fork waits for its children before its delete, G1:
 * the owner is told of every deletion, also one that was away when its fork
 * was let go). What a worker's death or return does to them. See docs/rref.md.
 * @module
 */
import type { AgentHost } from '../agent/host.js';
import type { WorkerInfo } from '../worker-info.js';
import { PeerCounter } from '../peer-limits.js';
import { RecentSet } from '../recent-set.js';
import type { DeleteBatches } from './delete-batches.js';
import { CREATE_FN } from './rref-protocol.js';
import type { UserState } from './rref.js';
import { ownerGone, recreate, releasedWhileAway, wakeWaiters } from './supervised.js';

/** Deletes kept for one owner declared failed, to send if it comes back. */
const OWED_PER_OWNER = 10_000;

/** The user forks held by one worker's RRef manager. */
export class UserForks {
  private readonly users = new Map<string, UserState>();
  /** User forks held here, per owner (RRefs that arrive are bounded per owner they name). */
  private readonly perOwner = new PeerCounter();
  /**
   * Deletes of forks whose owner was declared failed: sent if it comes back
   * (a stalled worker wrongly declared failed still holds the values), so it
   * does not keep them for good. owner -> `${rrefId}|${forkId}`.
   */
  private readonly owed = new Map<string, RecentSet<string>>();

  /** Forks of `host`, whose deletes go out through `deletes`. */
  constructor(
    private readonly host: AgentHost,
    private readonly deletes: DeleteBatches,
  ) {}

  /** The state of fork `forkId` held here. */
  get(forkId: string): UserState | undefined {
    return this.users.get(forkId);
  }

  /** Forks held here (not yet released) of values `owner` owns. */
  heldFrom(owner: string): number {
    return this.perOwner.get(owner);
  }

  /** Counts of forks held here and of forks sent on that their owners have not confirmed yet. */
  counts(): { users: number; pendingChildren: number } {
    let pendingChildren = 0;
    let users = 0;
    for (const state of this.users.values()) {
      pendingChildren += state.pendingChildren.size;
      // A released fork is no longer held here, though its delete may still be on its way to the owner.
      if (!state.released) users++;
    }
    return { users, pendingChildren };
  }

  /** Registers a new fork held here. */
  add(rrefId: string, owner: string, forkId: string): UserState {
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
    this.perOwner.add(owner, 1);
    return state;
  }

  private forget(state: UserState): void {
    if (this.users.get(state.forkId) !== state) return;
    this.users.delete(state.forkId);
    if (!state.released) this.perOwner.add(state.owner, -1);
  }

  /** Lets go of `state` (its last handle went): its owner is told once its children are confirmed. */
  release(state: UserState): Promise<void> {
    if (!state.released) {
      state.launch?.go();
      state.released = true;
      releasedWhileAway(state);
      // Room for another fork from this owner at once (see RRefManager.read()); the delete follows.
      if (this.users.get(state.forkId) === state) this.perOwner.add(state.owner, -1);
      state.deleting = this.deleteWhenDone(state).catch(() => undefined);
    }
    return state.deleting ?? Promise.resolve();
  }

  /** Releases every fork held here (on shutdown). */
  releaseAll(): Promise<void[]> {
    return Promise.all([...this.users.values()].map((state) => this.release(state).catch(() => undefined)));
  }

  /** Once the fork is confirmed (or failed), tells its owner it is gone. */
  private async deleteWhenDone(state: UserState): Promise<void> {
    await state.confirmation;
    if (state.failure?.code === 'RREF_CREATION_FAILED' || (state.failure && !state.confirmed)) {
      // The failure path already told the owner to drop the fork.
      if (state.pendingChildren.size === 0) this.forget(state);
      return;
    }
    // Also after RREF_OWNER_LOST: an owner declared failed may only have stalled, and still hold the value.
    await this.sendDelete(state).catch(() => undefined);
  }

  /** G2: waits for the children of `state`, then tells the owner this fork is gone (G1). */
  async sendDelete(state: UserState): Promise<void> {
    while (state.pendingChildren.size > 0 && !!this.host.running) await new Promise((resolve) => setTimeout(resolve, 10));
    try {
      if (this.gone(state.owner)) this.owe(state.owner, state.rrefId, state.forkId);
      else await this.deletes.add(state.owner, [state.rrefId, state.forkId]);
    } catch (error) {
      if (this.gone(state.owner)) this.owe(state.owner, state.rrefId, state.forkId);
      throw error;
    } finally {
      this.forget(state);
    }
  }

  /** The owner confirmed child fork `forkId` (child accept): its parent here may be deleted. */
  childAccepted(forkId: string): void {
    for (const state of this.users.values()) state.pendingChildren.delete(forkId);
  }

  /** `name` left or failed: children it was to confirm are given up, and the forks of values it owned fail. */
  workerGone(name: string, reason: 'left' | 'failed'): void {
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
  rejoined(name: string): void {
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

  /** Keeps a delete for `owner`, declared failed, in case it comes back. */
  private owe(owner: string, rrefId: string, forkId: string): void {
    let set = this.owed.get(owner);
    if (!set) this.owed.set(owner, (set = new RecentSet(OWED_PER_OWNER)));
    set.add(`${rrefId}|${forkId}`);
  }

  /** Owners declared failed that are back (a stall, not a death) get the deletes kept for them. */
  sendOwed(members: WorkerInfo[]): void {
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

  private gone(worker: string): boolean {
    return this.host.members.departure(worker) !== undefined;
  }

  /** Forgets every fork (after shutdown). */
  clear(): void {
    this.users.clear();
    this.perOwner.clear();
    this.owed.clear();
  }
}
