/**
 * What a plain client of a namespace (`tensorbus status`, the dashboard) can
 * vouch for about its members: it listens to the members subject, where
 * every member announces itself (hello, heartbeats) signed with its
 * membership key, and notes which key each name is announced with. A worker
 * is shown only when its answer to the membership query is signed with a
 * key heard there for its name, and its stats answer is signed with that
 * same key for the reader's own nonce (stats-reader.ts). A bus client that
 * answers the queries without being a member (it never announces on the
 * members subject, which NATS permissions may keep it from) shows nothing;
 * one that claims a member's name with another key makes the name ambiguous
 * while it keeps announcing, and an ambiguous name is shown by neither key: a
 * made-up figure is never shown, at worst a real one is missing while the
 * claim lasts.
 *
 * Announcements are checked before anything is kept: form, then the
 * signature (once per name and key; later ones of a known pair only refresh
 * it). At most {@link MAX_WITNESSED} names are kept, and a name not heard for
 * {@link WITNESS_FORGET_MS} is forgotten (a `bye` forgets it at once).
 * @module
 */
import type { Transport, TransportSubscription } from '@tensorbus/core';
import { Identity } from '../agent/identity.js';
import { MEMBERS_SUBJECT } from '../agent/subjects.js';
import { signedText } from '../membership/heartbeat-beat.js';
import { ANNOUNCEMENT_KINDS, BYE, readMembershipMessage, type Announcement } from '../membership/membership-protocol.js';
import { decodeWithoutTensors } from '../tensors.js';

/** Names kept at most. */
export const MAX_WITNESSED = 10_000;
/** Keys kept per name at most (more than one makes the name ambiguous already). */
const MAX_KEYS_PER_NAME = 4;
/** A name not announced for this long is forgotten, ms. */
export const WITNESS_FORGET_MS = 30_000;
/**
 * A name announced with another key within this long is ambiguous, ms (a
 * restarted worker's old key stops counting this long after its last beat:
 * more than the default failure timeout, 3 s).
 */
export const AMBIGUOUS_MS = 5_000;

/** True when `m` is an announcement in form (readMembershipMessage), signed by the key it carries. */
export function signedAnnouncement(m: unknown, identity: Identity): m is Announcement {
  const message = readMembershipMessage(m);
  if (message instanceof Error || !('sig' in message)) return false;
  return identity.verify(message.sk, signedText(message), message.sig);
}

/** The members subject as a plain client hears it. */
export class MemberWitness {
  /** When it began to listen (unix ms). */
  readonly since = Date.now();
  /** Announcements dropped (malformed or badly signed). */
  dropped = 0;
  /** name -> sign key -> last heard (unix ms). */
  private readonly heard = new Map<string, Map<string, number>>();
  /** name -> the key that signed its `bye`, and when it was heard (unix ms); at most {@link MAX_WITNESSED}, oldest first. */
  private readonly byes = new Map<string, { signKey: string; at: number }>();
  private readonly identity = new Identity();
  private readonly waiters = new Set<() => void>();
  private sweptAt = 0;
  private readonly subscription: TransportSubscription;

  /** Starts listening on `transport`'s members subject. */
  constructor(transport: Transport) {
    this.subscription = transport.subscribe(MEMBERS_SUBJECT, (message) => {
      try {
        this.onAnnouncement(decodeWithoutTensors(message.data) as Announcement);
      } catch {
        this.dropped++;
      }
    });
  }

  /** True when `name` was announced with `signKey` lately, and with no other key for {@link AMBIGUOUS_MS}. */
  vouches(name: string, signKey: string): boolean {
    const keys = this.heard.get(name);
    const at = keys?.get(signKey);
    const now = Date.now();
    if (at === undefined || now - at >= WITNESS_FORGET_MS) return false;
    for (const [key, other] of keys!) if (key !== signKey && now - other < AMBIGUOUS_MS) return false;
    return true;
  }

  /** True when `name` said goodbye with `signKey` within {@link WITNESS_FORGET_MS} (and has not announced itself with that key since). */
  saidBye(name: string, signKey: string): boolean {
    const bye = this.byes.get(name);
    return bye !== undefined && bye.signKey === signKey && Date.now() - bye.at < WITNESS_FORGET_MS;
  }

  /**
   * Resolves once every one of `workers` is vouched for, or once this witness
   * has listened for `listenedMs` (at once when it has already: a witness that
   * listens for long waits for nobody, whatever answers the queries).
   */
  async waitFor(workers: ReadonlyArray<{ name: string; signKey: string }>, listenedMs: number): Promise<void> {
    const timeoutMs = listenedMs - (Date.now() - this.since);
    const all = () => workers.every((w) => this.vouches(w.name, w.signKey));
    if (all() || timeoutMs <= 0) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve();
      };
      const check = () => {
        if (all()) done();
      };
      const timer = setTimeout(done, timeoutMs);
      this.waiters.add(check);
    });
  }

  /** Stops listening. */
  close(): void {
    this.subscription.unsubscribe();
    for (const check of [...this.waiters]) check();
  }

  private onAnnouncement(m: Announcement): void {
    if (typeof m !== 'object' || m === null || !ANNOUNCEMENT_KINDS.has(m.k)) return;
    const keys = this.heard.get(m.n);
    const known = keys?.has(m.sk) === true;
    // A pair verified before only refreshes; a copy of a member's beat says its key is its key, nothing more.
    if (!known && !signedAnnouncement(m, this.identity)) {
      this.dropped++;
      return;
    }
    if (m.k === BYE) {
      // A bye is checked whatever the pair, and forgets only the key that signed it.
      if (known && !signedAnnouncement(m, this.identity)) return;
      keys?.delete(m.sk);
      if (keys?.size === 0) this.heard.delete(m.n);
      this.byes.delete(m.n);
      if (this.byes.size >= MAX_WITNESSED) this.byes.delete(this.byes.keys().next().value!);
      this.byes.set(m.n, { signKey: m.sk, at: Date.now() });
      return;
    }
    const now = Date.now();
    if (this.byes.get(m.n)?.signKey === m.sk) this.byes.delete(m.n);
    if (keys !== undefined) {
      if (known || keys.size < MAX_KEYS_PER_NAME) keys.set(m.sk, now);
    } else {
      this.forgetSilent(now);
      if (this.heard.size >= MAX_WITNESSED) return;
      this.heard.set(m.n, new Map([[m.sk, now]]));
    }
    for (const check of [...this.waiters]) check();
  }

  /** Forgets names (and keys) not heard for {@link WITNESS_FORGET_MS}; runs when a new name would be kept, at most once a second. */
  private forgetSilent(now: number): void {
    if (now - this.sweptAt < 1_000) return;
    this.sweptAt = now;
    for (const [name, keys] of this.heard) {
      for (const [key, at] of keys) if (now - at >= WITNESS_FORGET_MS) keys.delete(key);
      if (keys.size === 0) this.heard.delete(name);
    }
  }
}
