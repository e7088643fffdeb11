/**
 * One worker's view of the group: the members it heard from (with the keys
 * their names are bound to and when each was last heard), the workers that
 * left or failed, and the failure detection over them. Bounded: at most
 * MAX_MEMBERS members and MAX_DEPARTED departed workers. The protocol that
 * feeds it is in membership.ts; see docs/rpc.md.
 * @module
 */
import { BehaviorSubject, Subject } from 'rxjs';
import type { Departure } from '../agent/host.js';
import type { WorkerInfo } from '../worker-info.js';
import { advance } from './replay-window.js';

/** Members a worker keeps track of at most (a group is far smaller; a flood of names is not). */
export const MAX_MEMBERS = 4096;
/** Departed workers remembered (why they left, and their keys against replays); the oldest go first. */
const MAX_DEPARTED = 4096;

/** The keys a name is bound to, and the newest sequence number heard under them. */
export interface Binding {
  inst: string;
  signKey: string;
  dhKey: string;
  seq: number;
}

/** A member of the group as this worker sees it. */
export interface Member extends Binding {
  info: WorkerInfo;
  /** The id this member claims while it joins a dynamic group (not final). */
  claimed?: number;
  joinedAt: number;
  lastSeen: number;
  /** Numbers below `seq` heard already (replay-window.ts). */
  late: number;
}

/** A worker that left or was declared failed, remembered. */
export interface Departed extends Binding {
  reason: Departure['reason'];
  /** Its id: not handed out again while remembered (a worker declared failed may still live). */
  id: number;
}

/** The members and departed workers one worker knows of. */
export class MemberView {
  /** Current members, this worker included, sorted by id then name. */
  readonly membership$ = new BehaviorSubject<WorkerInfo[]>([]);
  /** Fires when a worker leaves or is declared failed. */
  readonly gone$ = new Subject<Departure>();
  /** Fires when a new instance takes up the name of one that left or failed (a restarted worker). */
  readonly rejoined$ = new Subject<string>();
  /** Members by name. */
  readonly members = new Map<string, Member>();
  /** Departed workers by name, oldest first. */
  readonly departed = new Map<string, Departed>();

  /** The view of worker `selfName`, which publishes nothing once `hasLeft()`. */
  constructor(
    private readonly selfName: string,
    private readonly hasLeft: () => boolean,
  ) {}

  /** Records that `name` was heard, under the keys `keys`. */
  touch(name: string, inst: string, id: number, joinedAt: number, keys: Binding): void {
    const existing = this.members.get(name);
    // A static worker numbered by name announces -1 until it has counted everyone.
    // A final id never changes: an announcement of another one by the same instance is not taken in.
    if (existing && existing.inst === inst && existing.info.id >= 0) id = existing.info.id;
    const earlier = this.departed.get(name)?.inst;
    this.departed.delete(name);
    const late = existing && existing.inst === inst ? advance(existing.seq, existing.late, keys.seq) : 0;
    if (existing && existing.inst === inst && existing.info.id === id) {
      existing.lastSeen = Date.now();
      existing.late = late;
      existing.seq = keys.seq;
      return;
    }
    this.members.set(name, { ...keys, info: { name, id }, joinedAt, lastSeen: Date.now(), late });
    if (earlier !== undefined && earlier !== inst) this.rejoined$.next(name);
    this.publish();
  }

  /** Drops member `name` (its instance `inst`, when given) for `reason`, remembering its keys and id. */
  remove(name: string, inst: string | undefined, reason: Departure['reason'], seq?: number): void {
    const member = this.members.get(name);
    if (!member || name === this.selfName || (inst !== undefined && member.inst !== inst)) return;
    this.members.delete(name);
    if (this.departed.size >= MAX_DEPARTED) this.departed.delete(this.departed.keys().next().value!);
    this.departed.set(name, { reason, id: member.info.id, inst: member.inst, signKey: member.signKey, dhKey: member.dhKey, seq: Math.max(member.seq, seq ?? 0) });
    this.publish();
    this.gone$.next({ name, reason });
  }

  /** The smallest id not held or claimed by a member, not held by a remembered departed worker, and not in `excluded`. */
  freeId(excluded: Set<number>): number {
    const taken = new Set(excluded);
    for (const [name, member] of this.members) {
      if (name === this.selfName) continue;
      if (member.info.id >= 0) taken.add(member.info.id);
      if (member.claimed !== undefined) taken.add(member.claimed);
    }
    for (const departed of this.departed.values()) if (departed.id >= 0) taken.add(departed.id);
    let id = 0;
    while (taken.has(id)) id++;
    return id;
  }

  /** Counts every member as heard from at `now` (silence this worker could not hear says nothing). */
  markAllSeen(now: number): void {
    for (const member of this.members.values()) member.lastSeen = now;
  }

  /** Declares failed every other member not heard from for more than `failureTimeoutMs` before `now`. */
  expireSilent(now: number, failureTimeoutMs: number): void {
    for (const [name, member] of this.members) {
      if (name !== this.selfName && now - member.lastSeen > failureTimeoutMs) this.remove(name, member.inst, 'failed');
    }
  }

  /** Publishes the current members on membership$. */
  publish(): void {
    if (this.hasLeft()) return;
    const list = [...this.members.values()]
      .map((m) => m.info)
      .sort((a, b) => a.id - b.id || (a.name < b.name ? -1 : 1));
    this.membership$.next(list);
  }
}

/** True when each rank 0..size-1 is held by exactly one worker and every worker has a rank. */
export function isCompleteWorld(list: WorkerInfo[], size: number): boolean {
  if (list.length !== size) return false;
  const ranks = new Set(list.map((w) => w.id));
  return ranks.size === size && list.every((w) => w.id >= 0 && w.id < size);
}
