/**
 * Chunked transfers: payloads larger than the server's `max_payload` travel as
 * an announcement, then chunks pulled by the receiver with bounded credit.
 *
 *   sender   -> subject  (headers tb-xfer, tb-size, tb-chunk, tb-pull)       announcement, no payload (reply kept)
 *   receiver -> tb-pull  {"s": chunkSubject, "c": credit}                  start, then more credit
 *   sender   -> chunkSubject (header tb-seq: k)                             chunk k, at most `credit` ahead
 *   receiver -> tb-pull  {"s": chunkSubject, "abort": reason}              gives up (too large, late chunk)
 *   receiver -> tb-pull  {"s": "", "done": true}                            fetched it directly (direct/direct-protocol.ts)
 *
 * Chunks arrive in order on one subject from one publisher (NATS keeps the
 * order per connection), so a gap in tb-seq is a lost chunk. Either side gives
 * up after `chunkTimeoutMs` without progress, frees its buffer, and fails that
 * one transfer with a TransportError. See docs/data-plane.md.
 * @module
 */

export const H_TRANSFER = 'tb-xfer';
export const H_SIZE = 'tb-size';
export const H_PULL = 'tb-pull';
export const H_SEQ = 'tb-seq';
/** Bytes of each chunk but the last (announcement header). */
export const H_CHUNK = 'tb-chunk';

/** Bytes kept free in each message for headers and protocol overhead. */
export const HEADROOM = 4_096;
/** Chunks in flight per receiver. */
export const DEFAULT_WINDOW = 8;
/**
 * Bytes in flight per receiver, at most: with 64 MB chunks, 8 in flight
 * overran nats-server's per-connection buffers and chunks were dropped
 * silently (about one 400 MB transfer in 8 stalled).
 */
export const MAX_BYTES_IN_FLIGHT = 16 * 1024 * 1024;

/** The credit window for chunks of `chunkBytes`: DEFAULT_WINDOW, fewer for big chunks, at least 1. */
export function windowFor(chunkBytes: number): number {
  if (!Number.isFinite(chunkBytes) || chunkBytes <= 0) return DEFAULT_WINDOW;
  return Math.max(1, Math.min(DEFAULT_WINDOW, Math.floor(MAX_BYTES_IN_FLIGHT / chunkBytes)));
}
/** A transfer without progress for this long fails, ms. */
export const DEFAULT_CHUNK_TIMEOUT_MS = 10_000;

/** A pull message from a receiver. */
export interface PullMessage {
  /** The receiver's chunk subject. */
  s: string;
  /** Credit granted (chunks). */
  c?: number;
  /** The receiver gives up, and why. */
  abort?: string;
  /** The receiver got the whole payload another way (the direct data plane). */
  done?: boolean;
}
