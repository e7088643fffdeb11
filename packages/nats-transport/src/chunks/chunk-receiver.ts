/**
 * The receiving side of chunked transfers: pulls the chunks of an announced
 * payload into one buffer with bounded credit, and gives up (freeing the
 * buffer) on a lost chunk, a late one, or a payload over the limit.
 * @module
 */
import type { Msg, NatsConnection } from 'nats';
import { Frame, TransportError } from '@tensorbus/core';
import { acquireFrame } from '@tensorbus/core/internal';
import { H_DIRECT } from '@tensorbus/direct-routes/headers';
import { isValidSubject } from '../subject-check.js';
import { H_CHUNK, H_PULL, H_SEQ, H_SIZE, H_TRANSFER, windowFor, type PullMessage } from './chunk-protocol.js';

/** True when `msg` announces a chunked transfer. */
export function isAnnouncement(msg: Msg): boolean {
  return msg.headers?.get(H_TRANSFER) !== undefined && msg.headers.get(H_TRANSFER) !== '';
}

/** What an announcement says, checked (see {@link readAnnouncement}). */
export interface Announcement {
  /** Bytes announced. */
  size: number;
  /** Bytes of each chunk but the last, as the sender says (only sizes the credit window). */
  chunkBytes: number;
  /** Where the receiver's pulls go: a plain NATS subject. */
  pullSubject: string;
  /** The sender's direct-data-plane offer, unparsed (@tensorbus/direct-routes' DirectPlane.fetch checks it). */
  direct: string | undefined;
}

/**
 * The announcement in `msg`, checked where it enters: a size that is a safe
 * non-negative integer, and a pull subject this transport may publish to (a
 * plain subject: one with a space or line break would write protocol lines of
 * its own). Throws TransportError when malformed.
 */
export function readAnnouncement(msg: Msg): Announcement {
  const size = Number(msg.headers?.get(H_SIZE));
  const pullSubject = msg.headers?.get(H_PULL);
  if (!Number.isSafeInteger(size) || size < 0 || !isValidSubject(pullSubject)) {
    throw new TransportError('malformed chunked-transfer announcement');
  }
  return { size, chunkBytes: Number(msg.headers!.get(H_CHUNK)), pullSubject: pullSubject as string, direct: msg.headers!.get(H_DIRECT) || undefined };
}

/** Tells the sender of `announcement` that `message` (a pull): failures mean the connection is closing, and the sender times out on its own. */
export function sendPull(nc: NatsConnection, announcement: Announcement, message: PullMessage): void {
  try {
    nc.publish(announcement.pullSubject, new TextEncoder().encode(JSON.stringify(message)));
  } catch {
    // Closing: the sender frees the payload at its timeout.
  }
}

/** Limits and helpers of {@link receiveChunked}. */
export interface ChunkedReceive {
  /** A payload announced larger is refused before anything is allocated. */
  maxBytes: number;
  /** The transfer fails after this long without a chunk, ms. */
  timeoutMs: number;
  /** Makes a fresh inbox subject (this receiver's chunk subject). */
  inbox: () => string;
}

/** Pulls the payload `announcement` announced; resolves with all of it, a frame the caller owns. */
export function receiveChunked(nc: NatsConnection, announcement: Announcement, { maxBytes, timeoutMs, inbox }: ChunkedReceive): Promise<Frame> {
  const { size } = announcement;
  const window = windowFor(announcement.chunkBytes);
  const chunkSubject = inbox();
  const pull = (message: PullMessage) => sendPull(nc, announcement, message);
  if (size > maxBytes) {
    pull({ s: chunkSubject, abort: `payload of ${size} bytes exceeds the limit of ${maxBytes}` });
    return Promise.reject(new TransportError(`refused a payload of ${size} bytes: the limit is ${maxBytes}`));
  }
  return new Promise<Frame>((resolve, reject) => {
    let buffer: Frame | undefined = acquireFrame(size);
    let received = 0;
    let expected = 0;
    let sinceGrant = 0;
    let timer: NodeJS.Timeout | undefined;
    const fail = (reason: string) => {
      clearTimeout(timer);
      sub.unsubscribe();
      buffer?.release();
      buffer = undefined;
      pull({ s: chunkSubject, abort: reason });
      reject(new TransportError(`chunked transfer of ${size} bytes failed: ${reason}`));
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => fail(`no chunk for ${timeoutMs} ms (the sender is gone or a chunk was lost)`), timeoutMs);
      timer.unref?.();
    };
    const sub = nc.subscribe(chunkSubject, {
      // A throw in a NATS callback would stop the connection's reader: a failure here fails this transfer only.
      callback: (err, msg) => {
        try {
          onChunk(err, msg);
        } catch (error) {
          if (buffer) fail(`could not take a chunk: ${(error as Error).message}`);
        }
      },
    });
    function onChunk(err: Error | null, msg: Msg): void {
      if (!buffer) return;
      if (err) return fail(err.message);
      const seq = Number(msg.headers?.get(H_SEQ));
      if (seq !== expected) return fail(`chunk ${expected} was lost (got ${seq})`);
      if (received + msg.data.byteLength > size) return fail('more bytes than announced');
      buffer.bytes.set(msg.data, received);
      received += msg.data.byteLength;
      expected++;
      if (received === size) {
        clearTimeout(timer);
        sub.unsubscribe();
        const done = buffer;
        buffer = undefined;
        resolve(done);
        return;
      }
      arm();
      if (++sinceGrant >= Math.ceil(window / 2)) {
        pull({ s: chunkSubject, c: sinceGrant });
        sinceGrant = 0;
      }
    }
    arm();
    if (size === 0) {
      clearTimeout(timer);
      sub.unsubscribe();
      resolve(buffer);
      buffer = undefined;
      return;
    }
    pull({ s: chunkSubject, c: window });
  });
}
