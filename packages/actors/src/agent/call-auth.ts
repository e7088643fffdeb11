/**
 * Shows who sent a call. Each call carries `meta.auth = [counter, mac]`: an
 * HMAC-SHA256 (first 16 bytes) over the call's kind, function name and a
 * counter per (caller, callee), keyed by what the two workers' announced
 * X25519 keys agree on. The callee accepts `meta.from` as shown only when the
 * MAC checks with the key of the member of that name (or of that same instance
 * after it was declared failed: it may still be running), and the counter was not
 * seen before (a window of the last {@link WINDOW} counters: calls may arrive
 * out of order over a direct route and the bus). Anything else is an
 * unverified caller: served, never counted as a member. See docs/rpc.md.
 * @module
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Identity } from './identity.js';

/** How far behind the newest counter an older one may still arrive. */
export const WINDOW = 4096;
const MAC_BYTES = 16;
/** Pairs kept (members, and workers declared failed that may come back); the oldest go first. */
const MAX_PEERS = 8192;
const MAC_PATTERN = /^[A-Za-z0-9_-]{22}$/;

/** What `meta.auth` carries: a counter and a MAC. */
export type CallAuthField = [number, string];

/** Finds a member's announced X25519 key. */
export type DhKeyLookup = (name: string) => string | undefined;

interface PeerKeys {
  dhKey: string;
  send: Buffer;
  receive: Buffer;
  sent: number;
  newest: number;
  seen: Uint8Array;
}

/** The MACs of one worker's calls, both ways. */
export class CallAuth {
  /** Calls whose sender could not be shown (served as unverified). */
  unverified = 0;
  private readonly peers = new Map<string, PeerKeys>();

  constructor(private readonly identity: Identity, private readonly self: string, private readonly dhKeyOf: DhKeyLookup) {}

  /**
   * The `meta.auth` of a call of `fn` to `to` (or, with `body`, of a control
   * message: its bytes are covered too); undefined when `to`'s keys are not
   * known (not a member yet).
   */
  seal(to: string, kind: number, fn: string, body?: Uint8Array): CallAuthField | undefined {
    const peer = this.peer(to);
    if (!peer) return undefined;
    const counter = ++peer.sent;
    return [counter, mac(peer.send, kind, fn, counter, body)];
  }

  /** True when `auth` shows that the call of `fn` (or control message `body`) came from member `from`; records its counter. */
  check(from: string, kind: number, fn: string, auth: unknown, body?: Uint8Array): boolean {
    const shown = this.verify(from, kind, fn, auth, body);
    if (!shown) this.unverified++;
    return shown;
  }

  /** Forgets `name`'s keys and counters (it left or failed). */
  forget(name: string): void {
    this.peers.delete(name);
  }

  private verify(from: string, kind: number, fn: string, auth: unknown, body: Uint8Array | undefined): boolean {
    if (!Array.isArray(auth) || auth.length !== 2) return false;
    const [counter, tag] = auth as [unknown, unknown];
    if (!Number.isSafeInteger(counter) || (counter as number) < 1 || typeof tag !== 'string' || !MAC_PATTERN.test(tag)) return false;
    const peer = this.peer(from);
    if (!peer) return false;
    const c = counter as number;
    if (c <= peer.newest - WINDOW || (c <= peer.newest && peer.seen[c % WINDOW] === 1)) return false;
    const expected = Buffer.from(mac(peer.receive, kind, fn, c, body), 'base64url');
    if (!timingSafeEqual(expected, Buffer.from(tag, 'base64url'))) return false;
    if (c > peer.newest) {
      // Slots between the old newest and this one are counters not seen yet.
      for (let k = Math.max(peer.newest + 1, c - WINDOW + 1); k < c; k++) peer.seen[k % WINDOW] = 0;
      peer.newest = c;
    }
    peer.seen[c % WINDOW] = 1;
    return true;
  }

  private peer(name: string): PeerKeys | undefined {
    // A worker's calls to itself have a key too (its own two keys agree on one): a claim of its name is shown like any other.
    const dhKey = this.dhKeyOf(name);
    if (dhKey === undefined) return undefined;
    let peer = this.peers.get(name);
    if (!peer || peer.dhKey !== dhKey) {
      // A new instance of `name` (new keys): counters start again.
      peer = {
        dhKey,
        send: this.identity.pairKey(this.self, name, dhKey),
        receive: this.identity.pairKey(name, this.self, dhKey),
        sent: 0,
        newest: 0,
        seen: new Uint8Array(WINDOW),
      };
      if (this.peers.size >= MAX_PEERS) this.peers.delete(this.peers.keys().next().value!);
      this.peers.set(name, peer);
    }
    return peer;
  }
}

function mac(key: Buffer, kind: number, fn: string, counter: number, body: Uint8Array | undefined): string {
  const hmac = createHmac('sha256', key).update(`${kind}\0${fn}\0${counter}`);
  if (body) hmac.update(`\0${body.byteLength}\0`).update(body);
  return hmac.digest().subarray(0, MAC_BYTES).toString('base64url');
}
