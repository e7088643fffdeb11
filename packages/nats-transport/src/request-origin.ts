/**
 * What a subscriber can know of a request's sender without trusting it: the
 * NATS account it came from, when it crossed accounts through a service
 * import. nats-server rewrites such a request's reply subject to `_R_.…` and
 * sets its `Nats-Request-Info` header to `{"acc": <importing account>, …}`,
 * replacing any the sender wrote; a client cannot publish with a `_R_.` reply
 * itself (the server refuses it as a publish violation). Within one account
 * the sender writes both, so nothing is vouched for there.
 * @module
 */
import type { Msg } from 'nats';

/** The header nats-server sets on a request that came through a service import. */
const REQUEST_INFO = 'Nats-Request-Info';
/** Longest header value read (the server's is well under this). */
const MAX_INFO_LENGTH = 4096;
/** An account name as a key: a config's name or a JWT account's public nkey. */
const ACCOUNT_PATTERN = /^[A-Za-z0-9_.$-]{1,128}$/;

/**
 * `account:<name>` for a request that reached this account through another
 * account's service import (`account:?` when the server did not name it);
 * undefined for anything else.
 */
export function importedFrom(msg: Pick<Msg, 'reply' | 'headers'>): string | undefined {
  if (!msg.reply?.startsWith('_R_.')) return undefined;
  let account: unknown;
  try {
    const info = msg.headers?.get(REQUEST_INFO);
    if (info && info.length <= MAX_INFO_LENGTH) account = (JSON.parse(info) as { acc?: unknown } | null)?.acc;
  } catch {
    // A malformed header names no account: the request still came through an import.
  }
  return `account:${typeof account === 'string' && ACCOUNT_PATTERN.test(account) ? account : '?'}`;
}
