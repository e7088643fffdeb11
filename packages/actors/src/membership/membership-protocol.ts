/**
 * The membership protocol's messages: announcements on the members subject,
 * the control kinds it declares, and the status tool's query (membership.ts
 * runs the protocol).
 *
 * - join: ping the name's control subject (an answer means the name is taken),
 *   claim it, broadcast `hello`; members answer `here` to the joiner and add
 *   it. The joiner listens for `joinSettleMs` counted from the moment its own
 *   `hello` comes back through the bus, then sends itself a `sync` through the
 *   bus and waits for it (so a slow bus or a busy event loop cannot use up the
 *   window). Two joiners of one name: the greater instance id gives up. A
 *   joiner against a worker that already holds the name: the holder answers
 *   with a heartbeat and the joiner gives up.
 * - ids: a static group's ranks are given or numbered by name; a second
 *   claimant of a taken rank is refused with DuplicateWorkerError (a holder
 *   answers its hello with `mine`; between two joiners the later one, by start
 *   time then instance id, gives up). A dynamic worker claims the smallest id
 *   nobody it knows holds, claims or held. A holder answers a claim of its id
 *   with its heartbeat, and a claimant yields to it. Between claimants of one
 *   id the one that started first keeps it (start time, then instance id: an
 *   order every worker agrees on, unlike the order two claims arrive in, which
 *   NATS may deliver differently to different subscribers); it answers a later
 *   claim with `mine`, and the loser claims again.
 *   An id is final once `join` resolves and never changes.
 * - heartbeats: every worker broadcasts `hb` every `heartbeatMs`; a worker not
 *   heard from for `failureTimeoutMs` is declared failed (while this worker's
 *   own connection is up) and `gone$` fires so pending calls fail fast. Where
 *   the transport has a beacon (NATS), a thread of its own beats too, from
 *   the hello on (heartbeat-beat.ts), so a worker whose main
 *   thread computes for long is not taken for dead; the main thread's beats
 *   go on beside it, numbered from the same shared counter.
 * - leave: broadcast `bye`; members drop the worker at once.
 * - authentication: every announcement carries the sender's public keys, a
 *   sequence number and an Ed25519 signature. The first valid claim of a name
 *   binds its keys; later messages for that name count only when signed by
 *   them with a greater sequence number (a replay or a forgery is dropped and
 *   counted), so a worker is declared gone only by itself or by failure
 *   detection. Values are checked before use: a name that is not a valid
 *   worker name never becomes a subject.
 *
 * The messages are one union, {@link MembershipMessage}, read from the wire
 * by one function, {@link readMembershipMessage} (a malformed one is dropped
 * and counted, or answered with its SerializationError when a control
 * request asked), and handled by one dispatch (Membership's). See docs/rpc.md.
 *
 *   members subject   { k: 'hello' | 'sync' | 'hb' | 'bye' | 'claim' | 'mine', n, id, inst, t, q, sk, xk, sig }
 *   control subject   { k: 'here', (the same signed fields) }   a member answers a joiner
 *   control subject   { k: 'ping' }  -> { k: 'pong', n, inst }  is this name taken?
 *   members subject   { k: 'query', reply }  -> a `here` published on `reply` (a status subject)
 * @module
 */
import { SerializationError } from '@tensorbus/core';
import { isPublicKey } from '../agent/identity.js';
import { STATUS_REPLY_PATTERN } from '../agent/subjects.js';
import { isCount, isInstance, isWorkerId, isWorkerName } from '../agent/wire-checks.js';
import type { SignedFields } from './heartbeat-beat.js';

/** A joiner announces itself. */
export const HELLO = 'hello';
/** A worker's own marker through the bus: everything before it was delivered. */
export const SYNC = 'sync';
/** A heartbeat. */
export const HEARTBEAT = 'hb';
/** A worker leaves. */
export const BYE = 'bye';
/** A member answers a joiner (control kind). */
export const HERE = 'here';
/** Who is there? (answered with `here` on its reply subject). */
export const QUERY = 'query';
/** A dynamic joiner claims an id. */
export const CLAIM = 'claim';
/** The holder (or first claimant) of an id says so. */
export const MINE = 'mine';
/** Is this name taken? (control kind, asked of the name's own control subject). */
export const PING = 'ping';
/** The answer to a ping. */
export const PONG = 'pong';

/** The kinds of signed announcements. */
export type AnnouncementKind = typeof HELLO | typeof SYNC | typeof HEARTBEAT | typeof BYE | typeof HERE | typeof CLAIM | typeof MINE;

/** The kinds of signed announcements, as a set. */
export const ANNOUNCEMENT_KINDS: ReadonlySet<string> = new Set<AnnouncementKind>([HELLO, SYNC, HEARTBEAT, BYE, HERE, CLAIM, MINE]);

/** The control kinds the membership plugin declares. */
export const MEMBERSHIP_CONTROL_KINDS = [PING, HERE] as const;

/** A signed announcement of kind `K`: its sender's name, id, instance, start, number and keys, and their signature. */
export type Signed<K extends AnnouncementKind> = SignedFields & {
  k: K;
  /** Ed25519 signature of the signed text (heartbeat-beat.ts `signedText`). */
  sig: string;
};

/** An announcement on the members subject, or a `here` on a control subject. */
export type Announcement =
  | Signed<typeof HELLO>
  | Signed<typeof SYNC>
  | Signed<typeof HEARTBEAT>
  | Signed<typeof BYE>
  | Signed<typeof HERE>
  | Signed<typeof CLAIM>
  | Signed<typeof MINE>;

/** The status tool's query: every member answers with a signed `here` on `reply`, one of the status subjects. */
export type QueryMessage = { k: typeof QUERY; reply: string };
/** Is this name taken? Its holder answers `{ k: 'pong', n, inst }`. */
export type PingMessage = { k: typeof PING };

/** Every message of the membership protocol. */
export type MembershipMessage = Announcement | QueryMessage | PingMessage;

/**
 * The one check of a membership message from the wire: its kind is one of
 * the protocol's and every field its kind has is of its shape (a worker name,
 * an instance id, an id ≥ -1, a finite start time, a whole sequence number, two
 * public keys and a signature string; a query's reply subject is a status
 * subject). Returns the typed message, or a SerializationError saying what is
 * wrong. Whether the signature is right and the keys are the name's is the
 * receiver's check (announcement-check.ts), made after this one.
 */
export function readMembershipMessage(raw: unknown): MembershipMessage | SerializationError {
  const m = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  const malformed = (what: string) => new SerializationError(`malformed membership message ${typeof m.k === 'string' ? `'${m.k.slice(0, 64)}'` : '(no kind)'}: ${what}`);
  if (m.k === PING) return { k: PING };
  if (m.k === QUERY) return typeof m.reply === 'string' && STATUS_REPLY_PATTERN.test(m.reply) ? { k: QUERY, reply: m.reply } : malformed('reply');
  if (typeof m.k !== 'string' || !ANNOUNCEMENT_KINDS.has(m.k)) return malformed('not a kind of the membership protocol');
  if (!isWorkerName(m.n)) return malformed('n');
  if (!isWorkerId(m.id)) return malformed('id');
  if (!isInstance(m.inst)) return malformed('inst');
  if (typeof m.t !== 'number' || !Number.isFinite(m.t)) return malformed('t');
  if (!isCount(m.q)) return malformed('q');
  if (!isPublicKey(m.sk)) return malformed('sk');
  if (!isPublicKey(m.xk)) return malformed('xk');
  if (typeof m.sig !== 'string') return malformed('sig');
  return { k: m.k as AnnouncementKind, n: m.n, id: m.id, inst: m.inst, t: m.t, q: m.q, sk: m.sk, xk: m.xk, sig: m.sig } as Announcement;
}
