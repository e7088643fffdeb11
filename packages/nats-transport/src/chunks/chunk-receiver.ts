/**
 * The receiving side of chunked transfers: pulls the chunks of an announced
 * payload into one buffer with bounded credit, and gives up (freeing the
 * buffer) on a lost chunk, a late one, or a payload over the limit.
 * @module
 */
import type { Msg, NatsConnection } from 'nats';
import { Frame, TransportError } from '@tensorbus/core';
import { acquireFrame } from '@tensorbus/core/internal';
import { H_CHUNK, H_PULL, H_SEQ, H_SIZE, H_TRANSFER, windowFor, type PullMessage } from './chunk-protocol.js';

/** True when `msg` announces a chunked transfer. */
export function isAnnouncement(msg: Msg): boolean {
  return msg.headers?.get(H_TRANSFER) !== undefined && msg.headers.get(H_TRANSFER) !== '';
}

/** Pulls the payload `announcement` announced; resolves with all of it, a frame the caller owns. */
export function receiveChunked(
  nc: NatsConnection,
  announcement: Msg,
  maxBytes: number,
  timeoutMs: number,
  inbox: () => string,
): Promise<Frame> {
  const size = Number(announcement.headers!.get(H_SIZE));
  const window = windowFor(Number(announcement.headers!.get(H_CHUNK)));
  const pullSubject = announcement.headers!.get(H_PULL);
  const chunkSubject = inbox();
  const encoder = new TextEncoder();
  const pull = (message: PullMessage) => {
    try {
      nc.publish(pullSubject, encoder.encode(JSON.stringify(message)));
    } catch {
      // The connection is closing: the sender times out on its own.
    }
  };
  if (!Number.isSafeInteger(size) || size < 0 || !pullSubject) {
    return Promise.reject(new TransportError('malformed chunked-transfer announcement'));
  }
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
      timer.unref();
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
