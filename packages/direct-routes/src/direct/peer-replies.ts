/**
 * What a request on a direct connection gets back, and which replies it
 * accepts: the reply type, the size limits checked before anything is
 * allocated, and the errors a request fails with.
 * @module
 */
import { Frame, TransportError, type FrameSink } from '@tensorbus/core';
import { SEGMENT_REF_BYTES } from '../shm/shared-segments.js';
import { REPLY_FILLING, REPLY_OK, REPLY_SHM } from './direct-protocol.js';

/** A reply: its status and bytes (a frame the request's caller owns: release it when done; empty when a sink took them). */
export interface PeerReply {
  status: number;
  data: Frame;
}

/**
 * How large a request's reply may be: exactly `exact` bytes (a fetch knows
 * the size it was announced), or at most `max`. A reply of another size fails
 * its request before anything is allocated for it.
 */
export interface ReplyLimit {
  exact?: number;
  max?: number;
}

/** A reply declared a size its request does not accept. */
export class ReplySizeError extends TransportError {
  override readonly name = 'ReplySizeError';
}

/** The connection broke; `delivered` tells whether it had opened (requests may then have run). */
export class ConnectionLostError extends TransportError {
  override readonly name = 'ConnectionLostError';
  constructor(message: string, readonly delivered: boolean) {
    super(message);
  }
}

/** Offered a reply's size; returns where its bytes go, or undefined for a buffer of their own. */
export type ReplySinkFactory = (byteLength: number) => FrameSink | undefined;

const EMPTY = new Uint8Array(0);

/** A frame with nothing in it (a refusal, or a reply a sink took). */
export function emptyFrame(): Frame {
  return Frame.of(EMPTY);
}

/**
 * Why a reply of `size` bytes with `status` is refused ('fail': the
 * connection must go), or undefined when its request takes it. Replies larger
 * than `maxReplyBytes` are refused whatever the request's limit.
 */
export function replyRefusal(status: number, size: number, limit: ReplyLimit | undefined, maxReplyBytes: number): string | undefined {
  if (status !== REPLY_OK) {
    // Refusals carry nothing; a shared-memory reply carries one reference.
    if (status === REPLY_SHM || status === REPLY_FILLING ? size === SEGMENT_REF_BYTES : size === 0) return undefined;
    return limit?.exact !== undefined ? 'fail' : `status ${status} with ${size} bytes`;
  }
  if (limit?.exact !== undefined) return size === limit.exact ? undefined : 'fail';
  const max = Math.min(limit?.max ?? maxReplyBytes, maxReplyBytes);
  return size <= max ? undefined : `it declared ${size} bytes; the limit is ${max}`;
}
