/**
 * Subject names of the protocols. The transport adds the namespace prefix.
 * A name put into a subject is always a valid worker name (checked here too,
 * so a value from the wire that skipped its check cannot become a subject).
 * @module
 */
import { InvalidArgumentError } from '@tensorbus/core';
import { WORKER_NAME_PATTERN } from '../worker-info.js';

function token(name: string): string {
  if (!WORKER_NAME_PATTERN.test(name)) throw new InvalidArgumentError(`invalid worker name ${JSON.stringify(name.slice(0, 200))} in a subject`);
  return name;
}

/** Calls to worker `name` (request/reply). */
export const callSubject = (name: string): string => `tb.call.${token(name)}`;
/** Control messages to worker `name`: ping, shutdown status, stream credit, RRef messages. */
export const controlSubject = (name: string): string => `tb.ctl.${token(name)}`;
/** Membership announcements: hello, heartbeat, goodbye, query. */
export const MEMBERS_SUBJECT = 'tb.members';
/** Items of stream `id` opened by worker `caller`. */
export const streamSubject = (caller: string, id: number): string => `tb.stream.${token(caller)}.${id}`;
/** Where `tensorbus status` asks members to answer a `query`: `tb.status.` and 1 to 4 more tokens. */
export const STATUS_REPLY_PATTERN = /^tb\.status(\.[A-Za-z0-9_-]{1,64}){1,4}$/;
