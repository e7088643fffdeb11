/**
 * The autograd contexts one worker holds: opened here or joined on a peer's
 * call (counted against that peer by the ledger), found by id, and dropped
 * once (released, their creator or opener gone, or their lease run out),
 * leaving a tombstone so that a late call does not open a released one again.
 * @module
 */
import { AutogradError } from '@tensorbus/core';
import type { AgentHost } from '../agent/host.js';
import { RecentSet, TOMBSTONES } from '../recent-set.js';
import { AutogradContext } from './context.js';
import { ContextLedger } from './context-ledger.js';
import { creatorOf } from './protocol.js';
import { contextClosed, contextOpened, recordingScope } from './tape.js';

/** Identifies a distributed autograd context on every worker it reaches. */
export type ContextId = string;

/** The contexts of one worker, and what each peer made it hold in them. */
export class ContextTable {
  private readonly contexts = new Map<ContextId, AutogradContext>();
  /** Ids released here: a call of theirs arriving late must not bring them back. */
  private readonly released = new RecentSet<ContextId>(TOMBSTONES);
  /** What each peer made this worker hold in contexts. */
  readonly ledger: ContextLedger;

  constructor(private readonly host: AgentHost) {
    this.ledger = new ContextLedger(host);
  }

  /** Number of contexts held. */
  get size(): number {
    return this.contexts.size;
  }

  get(id: ContextId): AutogradContext | undefined {
    return this.contexts.get(id);
  }

  has(id: ContextId): boolean {
    return this.contexts.has(id);
  }

  /** The open context of this worker the running code belongs to, if any. */
  current(): AutogradContext | undefined {
    const store = recordingScope.getStore();
    return store instanceof AutogradContext && store.home === this && store.open ? store : undefined;
  }

  /** A new context `id`, held here. */
  open(id: ContextId): AutogradContext {
    const context = new AutogradContext(id, this);
    this.contexts.set(id, context);
    contextOpened();
    return context;
  }

  /**
   * The context `id` here, created on first contact (counted against `from`),
   * unless it was already released here or the worker stopped.
   * @throws AutogradError 'AUTOGRAD_LIMIT_EXCEEDED' when `from` holds its bound of contexts here.
   */
  join(id: ContextId, from: string): AutogradContext | undefined {
    let context = this.contexts.get(id);
    if (context === undefined) {
      if (this.released.has(id) || !this.host.running) return undefined;
      this.ledger.admit(from);
      context = this.open(id);
      this.ledger.open(context, from);
    }
    context.known.add(from);
    context.lastUsed = Date.now();
    return context;
  }

  /**
   * The context `id`.
   * @throws AutogradError 'AUTOGRAD_CONTEXT_NOT_FOUND' when this worker holds none of that id.
   */
  require(id: ContextId): AutogradContext {
    const context = typeof id === 'string' ? this.contexts.get(id) : undefined;
    if (context === undefined) {
      throw new AutogradError(
        'AUTOGRAD_CONTEXT_NOT_FOUND',
        `worker '${this.host.name}' has no autograd context ${String(id)}: contexts are released when their context() callback settles`,
      );
    }
    return context;
  }

  /** Forgets `context` here and disposes what it holds; false if it was already gone. */
  drop(context: AutogradContext): boolean {
    if (!context.open) return false;
    this.contexts.delete(context.id);
    this.ledger.close(context);
    this.tombstone(context.id);
    context.release();
    contextClosed();
    return true;
  }

  /** Remembers `id` as released, so that a late call does not open it again. */
  tombstone(id: ContextId): void {
    this.released.add(id);
  }

  /**
   * A worker left or failed: the contexts it created can never be released by
   * it, and those it opened here would be released through it.
   */
  dropFrom(name: string): void {
    for (const context of [...this.contexts.values()]) if (creatorOf(context.id) === name || context.openedBy === name) this.drop(context);
  }

  /**
   * Contexts whose creator or opener is not a current member (made-up ids,
   * another account through an import) are dropped once idle for `leaseMs`.
   */
  expireLeases(): void {
    const now = Date.now();
    for (const context of [...this.contexts.values()]) if (this.ledger.expired(context, now)) this.drop(context);
  }

  /** Drops every context (the worker stopped). */
  dropAll(): void {
    for (const context of [...this.contexts.values()]) this.drop(context);
  }
}
