/**
 * Who an owner serves an RRef to: a name is not a capability. An owner knows
 * the holders of each value it owns: the worker whose `remote()` created it,
 * and every fork confirmed through the fork protocol (docs/rref.md, "Who may
 * use an RRef"). Every owner-side operation (fetch, method calls, `remote()`
 * on the value, backward, forks, deletes) checks that the caller, as its call
 * or control message shows it, holds a fork of the value; anyone else gets the
 * answer an unknown id gets, so it learns nothing about which ids exist.
 *
 * Holders are kept under the caller's accountable name (peer-limits.ts): a
 * member's own name only when its call's MAC showed it, so an unverified
 * caller that claims a member's name is never that member. An unverified
 * holder is known by what it cannot choose: the NATS account it came through
 * (`?<account>`, a client of another account through an import), or `?here`
 * for this worker's own account; among the callers of one account, the 128
 * random bits of the ids are the protection.
 * @module
 */
import { RRefError } from '@tensorbus/core';
import type { CallerIdentity } from '../agent/call-context.js';
import { accountableName, isCurrentMember, type MembershipView } from '../peer-limits.js';
import type { OwnerEntry } from './owner-table.js';

/** The refusal of an RRef the caller may not use: the same error as an id the owner does not know. */
export function unknownRRef(owner: string, rrefId: unknown): RRefError {
  const shown = typeof rrefId === 'string' ? rrefId.slice(0, 64) : typeof rrefId;
  return new RRefError('RREF_OWNER_LOST', `worker '${owner}' holds no RRef ${shown} (released, its creation failed, or it never existed)`);
}

/** The name a caller's forks are kept under (see the module comment): a caller from another account by that account, as its creations are. */
export function holderName(caller: CallerIdentity): string {
  return accountableName({ caller: caller.name, verified: caller.verified, origin: caller.origin });
}

/** True when `caller` holds a confirmed fork of `entry`, or is the owner itself, shown. */
export function mayUse(entry: OwnerEntry, caller: CallerIdentity, host: MembershipView): boolean {
  if (caller.verified && caller.name === host.name) return true;
  const name = holderName(caller);
  for (const holder of entry.users.values()) if (holder === name) return true;
  return false;
}

/**
 * True when `sender` is the worker a fork was sent to (`expected`, the name
 * its parent wrote it for): a member must show it is that member; a name no
 * member has can only be taken at its word.
 */
export function isExpectedHolder(expected: string, sender: CallerIdentity | undefined, host: MembershipView): boolean {
  if (sender === undefined || sender.name !== expected) return false;
  return sender.verified || !isCurrentMember(host, expected);
}

/** True when `sender` holds fork `forkId` of `entry`, confirmed (as registered) or pending (as sent). */
export function holdsFork(entry: OwnerEntry, forkId: string, sender: CallerIdentity | undefined, host: MembershipView): boolean {
  if (sender === undefined) return false;
  const confirmed = entry.users.get(forkId);
  if (confirmed !== undefined) return confirmed === holderName(sender);
  const pending = entry.pendingUsers.get(forkId);
  return pending !== undefined && isExpectedHolder(pending, sender, host);
}

/** True when `caller` is the owner itself or holds any fork of `entry`, confirmed or pending: it may hand the RRef back to its owner. */
export function holdsAnyFork(entry: OwnerEntry, caller: CallerIdentity, host: MembershipView): boolean {
  if (mayUse(entry, caller, host)) return true;
  for (const expected of entry.pendingUsers.values()) if (isExpectedHolder(expected, caller, host)) return true;
  return false;
}
