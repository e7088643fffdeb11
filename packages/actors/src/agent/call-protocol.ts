/**
 * The call protocol's messages. A call is one request on the callee's call
 * subject; its reply is one message. Both are codec frames of small arrays.
 *
 *   request: [CALL,   fnName, args, meta]        -> reply [OK, value] | [ERROR, WireError]
 *   request: [STREAM, fnName, args, meta, open]  -> reply [OK, null]  | [ERROR, WireError]
 *
 * See docs/rpc.md for the flows and guarantees.
 * @module
 */
import { SerializationError } from '@tensorbus/core';
import type { WireError } from '@tensorbus/core/internal';
import type { CallMeta } from './call-context.js';

/** Request kinds. */
export const CALL = 0;
export const STREAM = 1;

/** Reply kinds. */
export const OK = 0;
export const ERROR = 1;

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

/** A decoded reply. */
export type CallReply = [typeof OK, unknown] | [typeof ERROR, WireError];

/** Checks a decoded request's shape; throws {@link SerializationError} if it is not one. */
export function parseRequest(value: unknown): CallRequest {
  if (!Array.isArray(value) || (value[0] !== CALL && value[0] !== STREAM)) {
    throw new SerializationError('message is not a tensorbus call');
  }
  const [kind, fn, args, meta, open] = value as [number, unknown, unknown, unknown, unknown];
  if (typeof fn !== 'string' || !Array.isArray(args) || typeof meta !== 'object' || meta === null || typeof (meta as CallMeta).from !== 'string') {
    throw new SerializationError('malformed call: expected [kind, name, args[], { from }]');
  }
  if (kind === STREAM) {
    const o = open as StreamOpen | undefined;
    if (!o || typeof o.id !== 'number' || typeof o.subject !== 'string' || typeof o.credit !== 'number') {
      throw new SerializationError('malformed stream call');
    }
  }
  return { kind: kind as CallRequest['kind'], fn, args, meta: meta as CallMeta, open: open as StreamOpen | undefined };
}

/** Checks a decoded reply's shape. */
export function parseReply(value: unknown): CallReply {
  if (!Array.isArray(value) || value.length !== 2 || (value[0] !== OK && value[0] !== ERROR)) {
    throw new SerializationError('reply is not a tensorbus reply');
  }
  if (value[0] === ERROR && (typeof value[1] !== 'object' || value[1] === null)) {
    throw new SerializationError('malformed error reply');
  }
  return value as CallReply;
}
