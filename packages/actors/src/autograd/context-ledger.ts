/**
 * What peers make a worker hold in distributed autograd contexts, counted per
 * peer: the contexts each peer opened here, and the bytes of float tensors
 * each peer sent into contexts here (kept until release). Refuses past the
 * agent's {@link PeerLimits} and tells which contexts' leases ran out. See
 * docs/dist-autograd.md ("What peers can make a worker hold").
 * @module
 */
import { AutogradError, type tf } from '@tensorbus/core';
import { isCurrentMember, PeerCounter, tensorBytes, type MembershipView, type PeerLimits } from '../peer-limits.js';
import type { AutogradContext } from './context.js';
import { creatorOf } from './protocol.js';

/** What the ledger needs of its agent. */
export interface LedgerHost extends MembershipView {
  readonly options: { readonly peerLimits: PeerLimits };
}

/** Per-peer accounting of one worker's contexts. */
export class ContextLedger {
  /** Contexts each peer opened here. */
  private readonly opened = new PeerCounter();
  /** Bytes of received tensors kept in contexts, per sending peer. */
  private readonly received = new PeerCounter();

  constructor(private readonly host: LedgerHost) {}

  private get self(): string {
    return this.host.name;
  }

  /**
   * Throws unless `from` may open one more context here.
   * @throws AutogradError 'AUTOGRAD_LIMIT_EXCEEDED'
   */
  admit(from: string): void {
    const limit = this.host.options.peerLimits.autogradContextsPerPeer;
    if (from !== this.self && this.opened.get(from) >= limit) {
      throw new AutogradError('AUTOGRAD_LIMIT_EXCEEDED', `worker '${from}' has ${limit} autograd contexts open on worker '${this.self}' (peerLimits.autogradContextsPerPeer)`);
    }
  }

  /** `from` opened `context` here (admitted before). */
  open(context: AutogradContext, from: string): void {
    if (from === this.self) return;
    context.openedBy = from;
    this.opened.add(from, 1);
  }

  /**
   * Counts the tensors `from` sent into `context` (kept until release).
   * @throws AutogradError 'AUTOGRAD_LIMIT_EXCEEDED' past peerLimits.autogradBytesPerPeer; nothing is counted then.
   */
  charge(context: AutogradContext, from: string, tensors: tf.Tensor[]): void {
    if (from === this.self || tensors.length === 0) return;
    let bytes = 0;
    for (const tensor of tensors) bytes += tensorBytes(tensor);
    const limit = this.host.options.peerLimits.autogradBytesPerPeer;
    if (this.received.get(from) + bytes > limit) {
      throw new AutogradError('AUTOGRAD_LIMIT_EXCEEDED', `worker '${from}' would keep more than ${limit} bytes of tensors in autograd contexts on worker '${this.self}' (peerLimits.autogradBytesPerPeer)`);
    }
    this.received.add(from, bytes);
    context.charges.set(from, (context.charges.get(from) ?? 0) + bytes);
  }

  /** `context` is gone: what it counted is given back. */
  close(context: AutogradContext): void {
    if (context.openedBy !== undefined) this.opened.add(context.openedBy, -1);
    for (const [peer, bytes] of context.charges) this.received.add(peer, -bytes);
    context.charges.clear();
  }

  /**
   * True when `context` sat idle past the lease and its creator (named in its
   * id) or the peer that opened it here is not a current member: made-up ids,
   * callers from another account through an import.
   */
  expired(context: AutogradContext, now: number): boolean {
    if (now - context.lastUsed <= this.host.options.peerLimits.leaseMs) return false;
    const creator = creatorOf(context.id);
    return !isCurrentMember(this.host, creator) || (context.openedBy !== undefined && !isCurrentMember(this.host, context.openedBy));
  }
}
