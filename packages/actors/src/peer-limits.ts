/**
 * Bounds on the state other workers (or callers that are not members, such as
 * another account reaching this worker through an import) can make on this
 * worker: RRefs it owns for them, distributed autograd contexts they open, and
 * streams it produces for them. Every piece of such state is counted against
 * the peer that made it, refused with a typed error past its bound, and
 * dropped when the peer leaves or fails, or, for a caller that is not a
 * current member, once it sits idle for `leaseMs`. See docs/rref.md,
 * docs/dist-autograd.md and docs/rpc.md (streams).
 * @module
 */
import { InvalidArgumentError } from '@tensorbus/core';
import { elementBytes } from '@tensorbus/core/internal';
import { emitWarning, unrefTimer } from './platform/process.js';

/** Per-peer bounds (the `peerLimits` option of `initRpc`). */
export interface PeerLimits {
  /** RRef forks one peer may hold on values this worker owns (a value it created counts as one). Default 10,000. */
  rrefsPerPeer: number;
  /** Tensor bytes of the values this worker keeps for RRefs one peer created. Default 1 GiB. */
  rrefBytesPerPeer: number;
  /** Autograd contexts one peer may open on this worker. Default 1,000. */
  autogradContextsPerPeer: number;
  /** Tensor bytes one peer may send into the autograd contexts it opened here (they are kept until release). Default 1 GiB. */
  autogradBytesPerPeer: number;
  /** Streams one peer may have open on this worker (produced here). Default 256. */
  streamsPerPeer: number;
  /** State a caller that is not a current member made is dropped after this long without use, ms. Default 30,000. */
  leaseMs: number;
}

/** The defaults of {@link PeerLimits}. */
export const DEFAULT_PEER_LIMITS: Readonly<PeerLimits> = {
  rrefsPerPeer: 10_000,
  rrefBytesPerPeer: 1 << 30,
  autogradContextsPerPeer: 1_000,
  autogradBytesPerPeer: 1 << 30,
  streamsPerPeer: 256,
  leaseMs: 30_000,
};

/** Applies defaults; throws InvalidArgumentError on a bound that is not a positive integer. */
export function resolvePeerLimits(given: Partial<PeerLimits> | undefined): PeerLimits {
  const limits = { ...DEFAULT_PEER_LIMITS, ...given };
  for (const [key, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value < 1) throw new InvalidArgumentError(`peerLimits.${key} must be a positive integer, got ${String(value)}`);
  }
  return limits;
}

/** What the membership test needs of a worker (an AgentHost has it). */
export interface MembershipView {
  readonly name: string;
  readonly members: { get(name: string): unknown };
}

/**
 * True when `peer` is this worker or a current member of its group. The one
 * place that decides whether state a peer made lives as long as the peer
 * (members: until they leave or fail) or under a lease (everyone else).
 */
export function isCurrentMember(host: MembershipView, peer: string): boolean {
  return peer === host.name || host.members.get(peer) !== undefined;
}

/** The name the state of unverified callers of this worker's own account (or process) is kept under. */
const UNVERIFIED_HERE = '?here';

/**
 * The name state made by a caller is kept under: its own for a caller that
 * showed it is that member; for anyone else, a name no member can have, made
 * of what the caller cannot choose rather than of the name it claims (which
 * costs nothing to change): `?account:<name>` for a caller the transport
 * vouches came through another NATS account's import (`origin`), else
 * {@link UNVERIFIED_HERE}. So a caller that only claims a member's name gets a
 * lease, not the member's lifetime, and every unverified caller of one account
 * shares one budget however many names it claims.
 */
export function accountableName(caller: { caller: string; verified: boolean; origin?: string }): string {
  if (caller.verified) return caller.caller;
  return caller.origin === undefined ? UNVERIFIED_HERE : `?${caller.origin}`;
}

/** Longest id (RRef, fork or autograd context) accepted from the wire, in characters. */
export const MAX_ID_LENGTH = 256;

/** True for an id from the wire worth looking up: a non-empty string of bounded length. */
export function isWireId(id: unknown): id is string {
  return typeof id === 'string' && id.length > 0 && id.length <= MAX_ID_LENGTH;
}

/** Bytes of tensor memory of `tensor`-like objects. */
export function tensorBytes(tensor: { size: number; dtype: string }): number {
  // Strings hold no fixed width: counted as 4 bytes an element, as before.
  return tensor.size * (elementBytes(tensor.dtype) ?? 4);
}

/** A counter per peer. */
export class PeerCounter {
  private readonly counts = new Map<string, number>();

  get(peer: string): number {
    return this.counts.get(peer) ?? 0;
  }

  add(peer: string, n: number): void {
    const next = this.get(peer) + n;
    if (next <= 0) this.counts.delete(peer);
    else this.counts.set(peer, next);
  }

  clear(): void {
    this.counts.clear();
  }
}

/** Runs a timer's work; an error in it (a user's dispose() gone wrong) must not crash the worker. */
/**
 * Runs `expire` (dropping state whose lease ran out) a few times per lease,
 * guarded; the timer never keeps the process alive.
 */
export function leaseTimer(leaseMs: number, expire: () => void): NodeJS.Timeout {
  const timer = setInterval(() => guarded(expire), Math.max(10, Math.min(1_000, Math.floor(leaseMs / 4))));
  unrefTimer(timer);
  return timer;
}

export function guarded(work: () => void): void {
  try {
    work();
  } catch (error) {
    emitWarning(`tensorbus: cleaning up peer state failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}
