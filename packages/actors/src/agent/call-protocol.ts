/**
 * The call protocol's messages. A call is one request on the callee's call
 * subject; its reply is one message. Both are codec frames of small arrays.
 *
 *   request: [CALL,   fnName, args, meta]        -> reply [OK, value] | [OK, value, {q, x}] | [ERROR, WireError]
 *   request: [STREAM, fnName, args, meta, open]  -> reply [OK, null]  | [ERROR, WireError]
 *
 * The third element of an OK reply is the callee's timing report (µs of
 * queueing and of the run), sent only when the request's meta has `prof: 1`
 * (the caller is profiling). A reply to a request the callee did not count
 * in its `receivedFrom` (its sender was not shown, or it was refused before
 * its sender was known) is of kind OK_UNCOUNTED or ERROR_UNCOUNTED, so the
 * caller takes it out of its `sentTo` and shutdown's barrier never waits for
 * a call nobody counted. See docs/rpc.md for the flows and guarantees.
 * @module
 */
import { SerializationError } from '@tensorbus/core';
import type { WireError } from '@tensorbus/core/internal';
import type { CallMeta } from './call-context.js';
import { streamSubject } from './subjects.js';
import { isWaitedByOrAbsent, MAX_WAITED_BY } from './reentrancy.js';
import { isWorkerName } from './wire-checks.js';

/** Largest initial credit a stream request may ask for. */
export const MAX_STREAM_CREDIT = 65_536;

/** Request kinds. */
export const CALL = 0;
export const STREAM = 1;

/** Reply kinds. */
export const OK = 0;
export const ERROR = 1;
/** The same replies, to a request the callee did not count as its sender's (see the module's note). */
export const OK_UNCOUNTED = 2;
export const ERROR_UNCOUNTED = 3;

/** How a stream is opened: where items go, and the initial credit. */
export interface StreamOpen {
  id: number;
  subject: string;
  credit: number;
}

/** A decoded request. */
export interface CallRequest {
  kind: typeof CALL | typeof STREAM;
  fn: string;
  args: unknown[];
  meta: CallMeta;
  open?: StreamOpen;
}

/** A decoded reply (an OK reply may carry the callee's timing report, unchecked here). */
export type CallReply = [typeof OK, unknown, unknown?] | [typeof ERROR, WireError];

/** Checks a decoded request's shape; throws {@link SerializationError} if it is not one. */
export function parseRequest(value: unknown): CallRequest {
  if (!Array.isArray(value) || (value[0] !== CALL && value[0] !== STREAM)) {
    throw new SerializationError('message is not a tensorbus call');
  }
  const [kind, fn, args, meta, open] = value as [number, unknown, unknown, unknown, unknown];
  if (typeof fn !== 'string' || !Array.isArray(args) || typeof meta !== 'object' || meta === null || !isWorkerName((meta as CallMeta).from)) {
    throw new SerializationError('malformed call: expected [kind, name, args[], { from: <worker name> }]');
  }
  if (!isWaitedByOrAbsent((meta as CallMeta).waitedBy)) {
    throw new SerializationError(`malformed call: meta.waitedBy must be at most ${MAX_WAITED_BY} [<worker name>, <turn>] pairs`);
  }
  if (kind === STREAM) {
    // Items go only to the caller's own stream subject: the request names it, and it must be that one.
    const o = open as StreamOpen | undefined;
    if (
      !o || !Number.isSafeInteger(o.id) || o.id < 1 || !Number.isSafeInteger(o.credit) || o.credit < 1 || o.credit > MAX_STREAM_CREDIT ||
      o.subject !== streamSubject((meta as CallMeta).from, o.id)
    ) {
      throw new SerializationError(`malformed stream call: expected { id, subject: 'tb.stream.<from>.<id>', credit: 1..${MAX_STREAM_CREDIT} }`);
    }
  }
  return { kind: kind as CallRequest['kind'], fn, args, meta: meta as CallMeta, open: open as StreamOpen | undefined };
}

/** A checked reply, and whether the callee counted its request as its sender's. */
export interface ParsedReply {
  reply: CallReply;
  counted: boolean;
}

/** Checks a decoded reply's shape. */
export function parseReply(value: unknown): ParsedReply {
  if (!Array.isArray(value) || typeof value[0] !== 'number' || value[0] < OK || value[0] > ERROR_UNCOUNTED || !Number.isInteger(value[0])) {
    throw new SerializationError('reply is not a tensorbus reply');
  }
  const counted = value[0] === OK || value[0] === ERROR;
  const kind = counted ? value[0] : value[0] - OK_UNCOUNTED;
  if (!(value.length === 2 || (value.length === 3 && kind === OK))) throw new SerializationError('reply is not a tensorbus reply');
  if (kind === ERROR && (typeof value[1] !== 'object' || value[1] === null)) {
    throw new SerializationError('malformed error reply');
  }
  return { reply: (counted ? value : [kind, ...value.slice(1)]) as CallReply, counted };
}

/** The kind of a reply: `kind` (OK or ERROR) as it is, or its uncounted form when the callee did not count the request. */
export function replyKind(kind: typeof OK | typeof ERROR, counted: boolean): number {
  return counted ? kind : kind + OK_UNCOUNTED;
}
