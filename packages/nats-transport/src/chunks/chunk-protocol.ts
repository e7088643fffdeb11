/**
 * Chunked transfers: payloads larger than the server's `max_payload` travel as
 * an announcement, then chunks pulled by the receiver with bounded credit.
 *
 *   sender   -> subject  (headers tb-xfer, tb-size, tb-pull; reply kept)   announcement, no payload
 *   receiver -> tb-pull  {"s": chunkSubject, "c": credit}                  start, then more credit
 *   sender   -> chunkSubject (header tb-seq: k)                             chunk k, at most `credit` ahead
 *   receiver -> tb-pull  {"s": chunkSubject, "abort": reason}              gives up (too large, late chunk)
 *
 * Chunks arrive in order on one subject from one publisher (NATS keeps the
 * order per connection), so a gap in tb-seq is a lost chunk. Either side gives
 * up after `chunkTimeoutMs` without progress, frees its buffer, and fails that
 * one transfer with a TransportError. See docs/chunking.md.
 * @module
 */

export const H_TRANSFER = 'tb-xfer';
export const H_SIZE = 'tb-size';
export const H_PULL = 'tb-pull';
export const H_SEQ = 'tb-seq';

/** Bytes kept free in each message for headers and protocol overhead. */
export const HEADROOM = 4_096;
/** Chunks in flight per receiver. */
export const DEFAULT_WINDOW = 8;
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
}
