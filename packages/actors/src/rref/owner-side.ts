/**
 * The owner's side of the RRef protocol: the fork, forked and delete messages
 * of holders (checked by readRRefMessage before they come here), the entries a creation request opens, the entries opened for
 * RRefs that came back before their creation, and the tombstones of forks
 * deleted before their value existed. Owned values themselves are kept in
 * owner-table.ts. See docs/rref.md.
 * @module
 */
import { RRefError } from '@tensorbus/core';
import { errorToWire } from '@tensorbus/core/internal';
import type { CallerIdentity } from '../agent/call-context.js';
import type { AgentHost } from '../agent/host.js';
import { isCurrentMember, isWireId } from '../peer-limits.js';
import { RecentSet, TOMBSTONES } from '../recent-set.js';
import { unrefTimer } from '../platform/process.js';
import { holderName, holdsFork, isExpectedHolder, mayUse, unknownRRef } from './holders.js';
import type { OwnerEntry, OwnerTable } from './owner-table.js';
import { checkCreateSpec, type DeleteMessage, type ForkedMessage, type ForkMessage, type RRefWire } from './rref-protocol.js';

/** How long a fork waits for the creation of its value to reach the owner, ms. */
export const FORK_WAIT_MS = 5_000;
/** Entries opened here for RRefs that arrived before their creation, at most, at once. */
const AWAITED_MAX = 1_000;

/** The owner side of one worker's RRef manager. */
export class OwnerSide {
  private readonly tombstones = new RecentSet<string>(TOMBSTONES);
  /** Entries awaiting their creation (see OwnerEntry.awaitingCreation) -> their expiry timers. */
  private readonly awaited = new Map<OwnerEntry, NodeJS.Timeout>();
  /** Values opened as their creation request arrived (openOnArrival), not yet taken by its run: rrefId -> that request's metadata (one object per request). */
  private readonly arrivals = new Map<string, object>();

  /** Serves the owner-side messages for the values in `owners`. */
  constructor(
    private readonly host: AgentHost,
    private readonly owners: OwnerTable,
  ) {}

  /**
   * A user forked its fork on (parent -> owner): the owner expects the new
   * holder's confirmation. Only a worker that holds the parent fork may.
   */
  onForked({ rrefId, forkId, parentFork, holder }: ForkedMessage, sender: CallerIdentity | undefined): unknown {
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
  onFork({ rrefId, forkId }: ForkMessage, sender: CallerIdentity | undefined): unknown {
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
    return { unknown: true, error: errorToWire(unknownRRef(this.host.name, rrefId)) };
  }

  /**
   * Forks a user let go of (a batch, see delete-batches.ts): each is dropped
   * when the sender holds it; a fork of a value not known yet is tombstoned
   * when the sender is the value's creator (its creation failed or timed out).
   */
  onDelete({ forks }: DeleteMessage, sender: CallerIdentity | undefined): unknown {
    for (const [rrefId, forkId] of forks) {
      const entry = this.owners.get(rrefId);
      if (!entry) {
        if (isExpectedHolder(rrefId.slice(0, rrefId.lastIndexOf('.')), sender, this.host)) this.tombstones.add(`${rrefId}|${forkId}`);
      } else if (holdsFork(entry, forkId, sender, this.host)) this.owners.deleteFork(rrefId, forkId);
    }
    return { ok: true };
  }

  /**
   * Opens the value of a creation request from `creator`; its user fork is
   * held by `holder` (the creator, or the name an unverified caller's state is
   * kept under: see accountableName). Undefined when there is nothing to make:
   * the fork was deleted before the request arrived, or the value exists.
   */
  openForCreation(rrefId: string, forkId: string | null, creator: string, holder = creator, request?: object): OwnerEntry | undefined {
    // Ids are made by their creator, prefixed with its name: nobody can take another worker's id.
    if (!isWireId(rrefId) || !rrefId.startsWith(`${creator}.`) || (forkId !== null && !isWireId(forkId))) {
      throw new RRefError('RREF_CREATION_FAILED', `malformed RRef creation request from '${creator}'`);
    }
    // Opened by this very request as it arrived: its run makes the value.
    if (request !== undefined && this.arrivals.get(rrefId) === request) {
      this.arrivals.delete(rrefId);
      return this.owners.get(rrefId);
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

  /**
   * A creation request arrived and waits for its RRef arguments to be usable
   * (Readiness, docs/rref.md): its value is opened now, with the creator's
   * fork, so that the forks its creator passes on meanwhile (`rref.forked`,
   * then the new holders' `rref.fork`) are known at once instead of being
   * answered `unknown` and asked again. Opened only when its run would open
   * it: the same checks (spec, id, room, a target the caller may use), else
   * nothing is kept and the run refuses the request as before. The request's
   * run takes the entry (openForCreation with the same `request`); a request
   * that ends without running gives it up (abandonArrival).
   */
  openOnArrival(args: unknown[], caller: CallerIdentity, request: object): void {
    const [rrefId, forkId, spec] = args;
    if (typeof rrefId !== 'string' || typeof forkId !== 'string' || this.owners.get(rrefId) !== undefined) return;
    try {
      checkCreateSpec(spec);
      if ('target' in spec) {
        const target = this.owners.get(spec.target);
        if (target === undefined || !mayUse(target, caller, this.host)) return;
      }
      // The holder's name as the run keeps it (with the caller's origin, as createValue's scope gives it).
      const holder = holderName(caller);
      if (this.openForCreation(rrefId, forkId, caller.name, holder) !== undefined) this.arrivals.set(rrefId, request);
    } catch {
      // Refused: the run refuses it again, with its error, in its reply.
    }
  }

  /** A creation request that opened its value on arrival ended without running: the value fails, for every holder. */
  abandonArrival(args: unknown[], request: object): void {
    const rrefId = args[0];
    if (typeof rrefId !== 'string' || this.arrivals.get(rrefId) !== request) return;
    this.arrivals.delete(rrefId);
    this.owners.get(rrefId)?.settle(undefined, new RRefError('RREF_CREATION_FAILED', `the creation of RRef ${rrefId.slice(0, 64)} was refused before it ran`));
  }

  /**
   * An RRef of ours whose value we do not know arrived. Its creation may
   * still be on its way (it was sent after a confirmation, or overtaken by a
   * smaller message): an entry awaits it for at most FORK_WAIT_MS, and the
   * call carrying the RRef waits for it (readiness). Bounded (AWAITED_MAX at
   * once); an id that was never made, or was dropped, fails that way.
   */
  awaitCreation(wire: RRefWire): OwnerEntry {
    const dropped = () => new RRefError('RREF_OWNER_LOST', `RRef ${String(wire.r).slice(0, 64)} came back to its owner '${this.host.name}', which holds no such value (dropped, or never made)`);
    if (!wire.f || !isWireId(wire.r) || !isWireId(wire.f) || this.awaited.size >= AWAITED_MAX || !this.host.running) throw dropped();
    const entry = this.owners.open(wire.r);
    entry.awaitingCreation = true;
    const timer = setTimeout(() => {
      this.awaited.delete(entry);
      if (!entry.awaitingCreation) return;
      entry.awaitingCreation = false;
      // A creation arriving later must not revive the forks deleted meanwhile.
      for (const forkId of entry.deleted) this.tombstones.add(`${entry.rrefId}|${forkId}`);
      entry.settle(undefined, dropped());
    }, FORK_WAIT_MS);
    unrefTimer(timer);
    this.awaited.set(entry, timer);
    return entry;
  }

  /** Forks held by callers that are not current members expire once their value sat unused for `leaseMs`. */
  expireLeases(): void {
    const { leaseMs } = this.host.options.peerLimits;
    const now = Date.now();
    this.owners.dropHolders((holder, entry) => now - entry.lastUsed > leaseMs && !isCurrentMember(this.host, holder));
  }

  /** Forgets the entries awaiting their creation (after shutdown). */
  clear(): void {
    for (const timer of this.awaited.values()) clearTimeout(timer);
    this.awaited.clear();
    this.arrivals.clear();
  }
}
