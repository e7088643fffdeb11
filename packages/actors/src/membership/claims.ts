/**
 * Who keeps a name and who keeps an id when several workers want one: the
 * name and id claims of the membership protocol (see membership.ts for the
 * protocol and docs/rpc.md). A static group's ranks are given or numbered by
 * name; a dynamic worker claims the smallest free id; between two claimants
 * the one that started first (start time, then instance id) keeps it, and a
 * holder always does.
 * @module
 */
import { DuplicateWorkerError, InvalidArgumentError, RpcTimeoutError } from '@tensorbus/core';
import type { WorkerInfo } from '../worker-info.js';
import { isCompleteWorld, type MemberView } from './member-view.js';
import { CLAIM, HEARTBEAT, HELLO, HERE, MINE, SYNC, type Announcement } from './membership-protocol.js';

/**
 * Claims a dynamic joiner makes before it gives up. Each lost claim excludes
 * its id, and a rival can hold one id per name it binds (at most MAX_MEMBERS),
 * so a hostile peer delays a joiner by a bounded number of rounds, never forever.
 */
const MAX_ID_CLAIMS = 64;

/** A dynamic joiner's claim of an id, in flight. */
interface Claim {
  id: number;
  /** Its own claim came back through the bus: claims of the id seen from now on came later. */
  echoed: boolean;
  /** Someone holds the id or claimed it first. */
  lost: boolean;
}

/** What the claims need of the worker that makes them. */
export interface Claimant {
  readonly name: string;
  readonly inst: string;
  /** When it started: with the instance id, the order every worker agrees on. */
  readonly joinedAt: number;
  /** True once it joined (its heart beats): it holds its name and id. */
  holds(): boolean;
  hasLeft(): boolean;
  /** Publishes an announcement of `kind` about `id` (its own id by default). */
  announce(kind: typeof HELLO | typeof HEARTBEAT | typeof CLAIM | typeof MINE, id?: number): void;
  /** Announces and waits until the announcement came back through the bus. */
  announceThroughBus(kind: typeof SYNC | typeof CLAIM, id?: number): Promise<void>;
  /** Records itself in its view under its current id. */
  touchSelf(): void;
}

/** One worker's claims of its name and its id. */
export class Claims {
  /** This worker's id: -1 until claimed or numbered; final once its join resolved. */
  id: number;
  /** Set when another worker keeps this worker's name or rank: the join fails with it. */
  conflict: DuplicateWorkerError | undefined;
  /** Told of a conflict found while a static group forms (awaitWorld). */
  private onConflict: ((error: DuplicateWorkerError) => void) | undefined;
  private claim: Claim | undefined;
  private readonly rivals = new Set<string>();
  private readonly rankRivals = new Set<string>();

  /** The claims of `worker`, a member of a static group of `worldSize` (of rank `rank`, if given) or of a dynamic one. */
  constructor(
    private readonly worker: Claimant,
    private readonly view: MemberView,
    private readonly worldSize: number | undefined,
    private readonly rank: number | undefined,
    private readonly joinSettleMs: number,
  ) {
    this.id = rank ?? -1;
  }

  /** A static group's worker: resolves once `worldSize` workers with ids have joined, or rejects after `timeoutMs`. */
  awaitWorld(timeoutMs: number): Promise<WorkerInfo[]> {
    const size = this.worldSize!;
    return new Promise((resolve, reject) => {
      const stop = () => {
        if (timer) clearTimeout(timer);
        this.onConflict = undefined;
        queueMicrotask(() => subscription.unsubscribe());
      };
      if (this.conflict) return reject(this.conflict);
      // A holder of this rank that answers late still refuses this worker.
      this.onConflict = (error) => {
        stop();
        reject(error);
      };
      const timer = timeoutMs > 0 ? setTimeout(() => {
        this.onConflict = undefined;
        subscription.unsubscribe();
        const missing = size - this.view.members.size;
        reject(new RpcTimeoutError(`static group of ${size} did not form within ${timeoutMs} ms: ${missing} worker(s) missing; present: ${[...this.view.members.keys()].join(', ')}`));
      }, timeoutMs) : undefined;
      const subscription = this.view.membership$.subscribe((list) => {
        if (isCompleteWorld(list, size)) {
          stop();
          resolve(list);
        }
      });
    });
  }

  /** This worker's own claim of `id` came back through the bus. */
  echoed(id: number): void {
    if (this.claim?.id === id) this.claim.echoed = true;
  }

  /**
   * Another worker's announcement names the id this worker holds or claims.
   * Returns true when the announcement must not enter this worker's view (a
   * rival for a rank this worker keeps).
   */
  contest(message: Announcement): boolean {
    if (message.id < 0) return false;
    if (this.worldSize === undefined) {
      const claim = this.claim;
      if (claim && !claim.lost && message.id === claim.id) {
        if (message.k === CLAIM || message.k === MINE) {
          // Another claimant of the id. Two workers may see two claims in opposite orders, so who
          // keeps the id is decided by an order they all agree on: the one that started first.
          if (!this.startedBefore(message)) claim.lost = true;
          // Tell a later claimant (it may not have heard ours).
          else if (message.k === CLAIM) this.worker.announce(MINE, claim.id);
        } else {
          // A holder (its heartbeat, its `here`).
          claim.lost = true;
        }
      } else if (this.worker.holds() && message.id === this.id && message.k === CLAIM) {
        // A holder answers as a holder: its heartbeat, which every claimant yields to.
        this.worker.announce(HEARTBEAT);
      }
      return false;
    }
    if (this.rank === undefined || message.id !== this.id) return false;
    if (this.worker.holds() && !this.conflict) {
      // A `mine` answers a hello: its sender held the rank when this worker said hello.
      if (message.k !== MINE) {
        if (message.k === HELLO) this.worker.announce(MINE);
        return true;
      }
    }
    const holder = message.k === HEARTBEAT || message.k === MINE;
    // Between two joiners the later one gives up (start time, then instance id): a claimant that came first keeps its rank.
    const later = !this.startedBefore(message);
    if (holder || later) {
      if (!this.conflict) {
        this.conflict = new DuplicateWorkerError(
          `rank ${this.id} of the static group of ${this.worldSize} is already taken by worker '${message.n}': give each worker its own rank`,
        );
        this.onConflict?.(this.conflict);
      }
      return false;
    }
    if (!this.rankRivals.has(message.inst)) {
      // The rival may have subscribed too late to hear this worker's hello.
      this.rankRivals.add(message.inst);
      this.worker.announce(HELLO);
    }
    return true;
  }

  /** True when this worker started before the sender of `message` (start time, then instance id: every worker orders two the same way). */
  private startedBefore(message: Announcement): boolean {
    return this.worker.joinedAt < message.t || (this.worker.joinedAt === message.t && this.worker.inst < message.inst);
  }

  /**
   * Claims the smallest id this worker knows nobody holds, claims or held,
   * until a claim stands: it came back through the bus with no earlier claim
   * or holder of that id, and no `mine` followed within the settle time.
   */
  async claimId(): Promise<void> {
    const lost = new Set<number>();
    for (let attempt = 0; attempt < MAX_ID_CLAIMS; attempt++) {
      const claim: Claim = { id: this.view.freeId(lost), echoed: false, lost: false };
      this.claim = claim;
      await this.worker.announceThroughBus(CLAIM, claim.id);
      claim.echoed = true;
      if (!claim.lost) {
        await new Promise((resolve) => setTimeout(resolve, this.joinSettleMs));
        await this.worker.announceThroughBus(SYNC);
      }
      if (!claim.lost && !this.worker.hasLeft()) {
        // Final before anything else can run: from here on this worker defends the id as its holder.
        this.id = claim.id;
        this.claim = undefined;
        return;
      }
      this.claim = undefined;
      if (this.worker.hasLeft()) throw new DuplicateWorkerError(`worker '${this.worker.name}' left while it was getting an id`);
      lost.add(claim.id);
    }
    throw new RpcTimeoutError(`worker '${this.worker.name}' could not get an id: ${MAX_ID_CLAIMS} claims were taken by others`);
  }

  /**
   * Another instance claims this worker's name. A holder (joined, heart
   * beating) keeps it and answers with a heartbeat, which a joiner takes as a
   * refusal. Between two joiners the greater instance id gives up; the lesser
   * says hello again, in case the other subscribed too late to hear it.
   */
  onRival(message: Announcement): void {
    if (this.worker.holds()) {
      if (message.k === HELLO) this.worker.announce(HEARTBEAT);
      return;
    }
    const holder = message.k === HEARTBEAT || message.k === HERE;
    if (holder || this.worker.inst > message.inst) {
      this.conflict ??= new DuplicateWorkerError(`worker name '${this.worker.name}' was claimed by another worker at the same time: choose another name`);
    } else if (!this.rivals.has(message.inst)) {
      this.rivals.add(message.inst);
      this.worker.announce(HELLO);
    }
  }

  /** A static group without explicit ranks numbers its workers by name once complete. */
  resolveStaticIds(): void {
    if (this.worldSize === undefined || this.id >= 0 || this.view.members.size < this.worldSize) return;
    const names = [...this.view.members.keys()].sort();
    this.id = names.indexOf(this.worker.name);
    if (this.id >= this.worldSize) {
      throw new InvalidArgumentError(`more than worldSize=${this.worldSize} workers joined this namespace`);
    }
    this.worker.touchSelf();
    if (this.worker.holds()) this.worker.announce(HEARTBEAT);
    for (const [name, member] of this.view.members) {
      if (member.info.id < 0) member.info = { name, id: names.indexOf(name) };
    }
    this.view.publish();
  }
}
