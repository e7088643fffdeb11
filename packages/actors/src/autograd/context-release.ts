/**
 * Releasing a context everywhere (`tb.autograd.release`): dropped here, then
 * each worker it knows is asked to do the same; an unanswered request is
 * retried in the background, backing off, until the peer answers, leaves or
 * fails (a peer that is not a member: at most its lease). Only a verified
 * participant may release a context here. See docs/dist-autograd.md.
 * @module
 */
import { PermissionDeniedError } from '@tensorbus/core';
import type { AgentHost } from '../agent/host.js';
import { isCurrentMember } from '../peer-limits.js';
import { unrefTimer } from '../platform/process.js';
import type { AutogradContext } from './context.js';
import type { ContextId, ContextTable } from './context-table.js';
import { RELEASE } from './protocol.js';
import { isTimeout, protocolCall } from './protocol-call.js';

/** Longest pause between two attempts to release a context on a peer, ms. */
const RELEASE_RETRY_MAX_MS = 5_000;

/** Releases the contexts of one worker here and on their other workers. */
export class ContextRelease {
  constructor(
    private readonly host: AgentHost,
    private readonly contexts: ContextTable,
  ) {}

  /**
   * `from` asked to release `contextId`: releases it here and on the workers
   * it knows. Only a participant may: a verified caller this part of the
   * context exchanged calls with. A verified member naming a context not here
   * (the release overtook the call it follows) leaves a tombstone, so the late
   * call does not open it again.
   * @throws PermissionDeniedError for an unverified caller or a worker that is not a participant; nothing changes.
   */
  async releaseFrom(contextId: ContextId, from: string, verified: boolean): Promise<void> {
    const context = this.contexts.get(contextId);
    if (!verified || (context !== undefined && !context.known.has(from))) {
      throw new PermissionDeniedError(`worker '${String(from).slice(0, 64)}' may not release autograd context ${String(contextId).slice(0, 64)}: only its verified participants may`);
    }
    if (context === undefined) {
      this.contexts.tombstone(contextId);
      return;
    }
    if (!this.contexts.drop(context)) return;
    await this.releasePeers(context, from);
  }

  /** Asks every worker `context` knows but `from` to release it, and waits for their first answers. */
  async releasePeers(context: AutogradContext, from: string | undefined): Promise<void> {
    const self = this.host.name;
    const peers = [...context.known].filter((w) => w !== from && w !== self && this.host.members.departure(w) === undefined);
    if (peers.length === 0 || !this.host.running) return;
    const timeoutMs = Math.min(this.host.options.rpcTimeoutMs || 10_000, 10_000);
    await Promise.all(peers.map((w) => this.releaseOn(w, context.id, timeoutMs)));
  }

  /**
   * Asks `peer` to release `contextId`. Resolves after the first attempt; an
   * unanswered one (lost in a bus outage, a reconnect) is retried in the
   * background, backing off, until the peer answers, leaves or fails, or this
   * worker stops; for a peer that is not a member, at most its lease.
   */
  private async releaseOn(peer: string, contextId: ContextId, timeoutMs: number): Promise<void> {
    if (await this.tryRelease(peer, contextId, timeoutMs)) return;
    const giveUp = Date.now() + this.host.options.peerLimits.leaseMs;
    void (async () => {
      for (let pause = 100; ; pause = Math.min(pause * 2, RELEASE_RETRY_MAX_MS)) {
        await new Promise((resolve) => unrefTimer(setTimeout(resolve, pause)));
        if (!this.host.running || this.host.members.departure(peer) !== undefined) return;
        if (!isCurrentMember(this.host, peer) && Date.now() > giveUp) return;
        if (await this.tryRelease(peer, contextId, timeoutMs)) return;
      }
    })();
  }

  /** One release attempt; true once the peer answered (an error it answered with counts: it got the message). */
  private async tryRelease(peer: string, contextId: ContextId, timeoutMs: number): Promise<boolean> {
    try {
      await protocolCall(this.host, peer, RELEASE, [contextId], timeoutMs);
      return true;
    } catch (error) {
      // Silence (a timeout, nobody listening, the bus down) is retried; any answer means the peer got it.
      const code = (error as { code?: unknown }).code;
      return !isTimeout(error) && code !== 'WORKER_UNAVAILABLE' && code !== 'TRANSPORT';
    }
  }
}
