/**
 * The check every membership announcement passes before it counts, once its
 * form was checked (readMembershipMessage): its signature, the binding of its
 * name to its keys, and its sequence number against replays
 * (replay-window.ts). See docs/rpc.md.
 * @module
 */
import type { Identity } from '../agent/identity.js';
import { signedText } from './heartbeat-beat.js';
import { MAX_MEMBERS, type Binding, type MemberView } from './member-view.js';
import { BYE, HEARTBEAT, HELLO, type Announcement } from './membership-protocol.js';
import { takeLate } from './replay-window.js';

/** The worker that checks: its name, instance, keys and the newest number it signed. */
export interface CheckingWorker {
  readonly name: string;
  readonly inst: string;
  readonly identity: Identity;
  /** The newest sequence number this worker signed (its main thread's and its beacon's). */
  ownSeq(): number;
}

/**
 * True when `m` (well formed: readMembershipMessage) is signed by the keys it carries, and those are
 * the keys its name is bound to in `view` (a name not bound yet, or bound to
 * an instance that has gone, binds them now), with a sequence number above
 * every one heard from that instance; or `'late'` for a member's `hb` or
 * `hello` not heard yet, with a number a little below the newest (its
 * beacon's and its main thread's beats travel on two connections), after
 * marking it heard and the member seen.
 */
export function authentic(m: Announcement, self: CheckingWorker, view: MemberView): boolean | 'late' {
  // What can be decided without the signature is decided first: a replay or a stranger costs no verification.
  const signed = () => self.identity.verify(m.sk, signedText(m), m.sig);
  if (m.n === self.name) {
    // This worker's own echo, or a rival for its name (the name-claim protocol decides).
    return signed() && (m.inst !== self.inst || (m.sk === self.identity.signKey && m.q <= self.ownSeq()));
  }
  const bound: Binding | undefined = view.members.get(m.n) ?? view.departed.get(m.n);
  if (bound === undefined || bound.inst !== m.inst) {
    // A live member's name claimed by another instance: the member keeps it until it leaves or fails.
    // New names beyond MAX_MEMBERS are not taken in: announcements alone cannot grow this worker's state without bound.
    return !view.members.has(m.n) && m.k !== BYE && view.members.size < MAX_MEMBERS && signed();
  }
  if (m.sk !== bound.signKey || m.xk !== bound.dhKey) return false;
  if (m.q > bound.seq) return signed();
  // Only a live member: a worker that said bye (or was declared failed) is not brought back by an older beat.
  const member = view.members.get(m.n);
  if (member !== bound || (m.k !== HEARTBEAT && m.k !== HELLO)) return false;
  const late = takeLate(member.seq, member.late, m.q);
  if (late === undefined || !signed()) return false;
  member.late = late;
  member.lastSeen = Date.now();
  return 'late';
}
