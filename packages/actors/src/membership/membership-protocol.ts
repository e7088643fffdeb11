/**
 * The membership protocol's messages (see membership.ts for the protocol):
 * announcements on the members subject, and the control kinds it declares.
 * @module
 */
import type { ControlMessage } from '../agent/control.js';
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

/** The kinds of announcements. */
export type AnnouncementKind = typeof HELLO | typeof SYNC | typeof HEARTBEAT | typeof BYE | typeof HERE | typeof QUERY | typeof CLAIM | typeof MINE;

/** The kinds an announcement that is checked and observed may have (a query is answered, not observed). */
export const ANNOUNCEMENT_KINDS: ReadonlySet<string> = new Set<AnnouncementKind>([HELLO, SYNC, HEARTBEAT, BYE, HERE, CLAIM, MINE]);

/** The control kinds the membership plugin declares. */
export const MEMBERSHIP_CONTROL_KINDS = [PING, HERE] as const;

/** An announcement on the members subject or a `here` on a control subject. */
export interface Announcement extends ControlMessage, SignedFields {
  k: AnnouncementKind;
  /** Ed25519 signature of the signed text (heartbeat-beat.ts `signedText`). */
  sig: string;
  reply?: string;
}
