/**
 * The RRefs the gateway holds for its clients, behind opaque handles. A
 * handle is 144 random bits, valid only for the client that got it (another
 * client naming it is told it does not exist, as for a made-up one), bounded
 * per client, per identity (all its clients share one agent, which the
 * workers bound as one peer) and in clients, and released when its client has been idle for
 * `idleMs`: a client that vanished pins nothing on the workers for longer.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { GatewayError } from './errors.js';
import type { RRef } from '@tensorbus/actors/internal';

/** What a handle string looks like (checked before any lookup). */
const HANDLE_PATTERN = /^rref-[A-Za-z0-9_-]{24}$/;

interface ClientHandles {
  identity: string;
  handles: Map<string, RRef<unknown>>;
  lastSeen: number;
}

/** Bounds of a {@link HandleTable}. */
export interface HandleLimits {
  maxHandlesPerClient: number;
  /** Handles all the clients of one identity may hold together. */
  maxHandlesPerIdentity: number;
  maxClients: number;
  /** A client silent this long loses its handles, ms. */
  idleMs: number;
}

/** RRef handles by client. */
export class HandleTable {
  private readonly clients = new Map<string, ClientHandles>();
  /** Handles held by the clients of each identity. */
  private readonly byIdentity = new Map<string, number>();
  private readonly sweeper: NodeJS.Timeout;

  /**
   * @param busy - true for a client with a request in flight: never idle, however long its calls take.
   */
  constructor(
    private readonly limits: HandleLimits,
    private readonly busy: (client: string) => boolean = () => false,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(limits.idleMs / 4, 60_000)));
    this.sweeper.unref();
  }

  /** Marks `client` as active (each of its requests does when it ends; one in flight is never idle). */
  touch(client: string): void {
    const state = this.clients.get(client);
    if (state) state.lastSeen = this.now();
  }

  /**
   * A new handle of `client` (of `identity`) for `rref`. Past the client's
   * bound, its identity's, or the table's in clients, the RRef is released
   * and GATEWAY_LIMIT_EXCEEDED thrown.
   */
  adopt(client: string, identity: string, rref: RRef<unknown>): string {
    const state = this.clients.get(client);
    if (!state && this.clients.size >= this.limits.maxClients) return this.refuse(rref, `the gateway holds handles for ${this.limits.maxClients} clients already`);
    if ((state?.handles.size ?? 0) >= this.limits.maxHandlesPerClient) {
      return this.refuse(rref, `this client holds ${this.limits.maxHandlesPerClient} RRef handles already: release some with rref.release(handle)`);
    }
    const held = this.byIdentity.get(identity) ?? 0;
    if (held >= this.limits.maxHandlesPerIdentity) {
      return this.refuse(rref, `the clients of identity '${identity}' hold ${this.limits.maxHandlesPerIdentity} RRef handles already: release some with rref.release(handle)`);
    }
    const handle = `rref-${randomBytes(18).toString('base64url')}`;
    const target = state ?? { identity, handles: new Map(), lastSeen: this.now() };
    this.clients.set(client, target);
    target.handles.set(handle, rref);
    target.lastSeen = this.now();
    this.byIdentity.set(identity, held + 1);
    return handle;
  }

  /** Forgets `count` handles of `identity`'s clients. */
  private dropped(identity: string, count: number): void {
    const left = (this.byIdentity.get(identity) ?? 0) - count;
    if (left > 0) this.byIdentity.set(identity, left);
    else this.byIdentity.delete(identity);
  }

  private refuse(rref: RRef<unknown>, why: string): never {
    void rref.release().catch(() => undefined);
    throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', why);
  }

  /** The RRef of `client`'s `handle`; GATEWAY_UNKNOWN_HANDLE when this client holds no such handle. */
  get(client: string, handle: unknown): RRef<unknown> {
    const rref = typeof handle === 'string' && HANDLE_PATTERN.test(handle) ? this.clients.get(client)?.handles.get(handle) : undefined;
    if (!rref) throw unknownHandle(handle);
    return rref;
  }

  /** Releases `client`'s `handle`; GATEWAY_UNKNOWN_HANDLE when it holds no such handle. */
  async release(client: string, handle: unknown): Promise<void> {
    const rref = this.get(client, handle);
    const state = this.clients.get(client)!;
    state.handles.delete(handle as string);
    this.dropped(state.identity, 1);
    if (state.handles.size === 0) this.clients.delete(client);
    await rref.release();
  }

  /** Handles `client` holds. */
  count(client: string): number {
    return this.clients.get(client)?.handles.size ?? 0;
  }

  /** Releases the handles of every client idle for `idleMs` or more (since its last request ended, none in flight). */
  sweep(): void {
    const cutoff = this.now() - this.limits.idleMs;
    for (const [client, state] of this.clients) {
      if (state.lastSeen > cutoff || this.busy(client)) continue;
      this.clients.delete(client);
      this.dropped(state.identity, state.handles.size);
      for (const rref of state.handles.values()) void rref.release().catch(() => undefined);
    }
  }

  /** Releases every handle and stops sweeping. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const all = [...this.clients.values()].flatMap((state) => [...state.handles.values()]);
    this.clients.clear();
    this.byIdentity.clear();
    await Promise.all(all.map((rref) => rref.release().catch(() => undefined)));
  }
}

function unknownHandle(handle: unknown): GatewayError {
  const shown = typeof handle === 'string' ? JSON.stringify(handle.slice(0, 40)) : typeof handle;
  return new GatewayError('GATEWAY_UNKNOWN_HANDLE', `this client holds no RRef handle ${shown} (released, expired after the idle timeout, or never given to it)`);
}
