/**
 * Writes reply frames to one data-port connection, in order. A body of bytes
 * is written as it is; a deferred body (a frame whose tensor bytes are read
 * as they are sent) is copied piece by piece into a few chunk buffers, each
 * refilled once the socket has taken it, so a 400 MB reply needs 8 MiB of
 * buffers instead of 400 MB. Frames that come while one streams wait for it.
 * @module
 */
import type { Socket } from 'node:net';
import type { DeferredBytes, Payload } from '@tensorbus/core';

/** Bodies below this go out in one write with their header. */
const COALESCE_BYTES = 64 * 1024;
/** Size and number of the chunk buffers a deferred body streams through. */
const CHUNK_BYTES = 4 * 2 ** 20;
const CHUNKS = 2;

/** The reply frames of one connection. */
export class FrameWriter {
  private streaming = false;
  private readonly waiting: Array<() => void> = [];
  private chunks: Uint8Array[] | undefined;

  constructor(private readonly socket: Socket) {}

  /** Writes `header` then `body`; `onWritten` is told once the socket has taken all of it. */
  write(header: Buffer, body: Payload, onWritten?: () => void): void {
    if (this.streaming) {
      this.waiting.push(() => this.write(header, body, onWritten));
      return;
    }
    const written = (error?: Error | null) => {
      if (!error) onWritten?.();
    };
    if (!(body instanceof Uint8Array)) return this.stream(header, body, onWritten);
    if (body.byteLength < COALESCE_BYTES) {
      this.socket.write(Buffer.concat([header, body]), written);
      return;
    }
    this.socket.cork();
    this.socket.write(header);
    this.socket.write(body, written);
    this.socket.uncork();
  }

  private stream(header: Buffer, body: DeferredBytes, onWritten: (() => void) | undefined): void {
    this.streaming = true;
    const letGo = body.hold();
    this.chunks ??= Array.from({ length: CHUNKS }, () => new Uint8Array(CHUNK_BYTES));
    const free = [...this.chunks];
    let position = 0;
    let inFlight = 0;
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      letGo();
      this.streaming = false;
      if (ok) onWritten?.();
      for (const next of this.waiting.splice(0)) next();
    };
    const pump = () => {
      while (!done && free.length > 0 && position < body.byteLength) {
        const chunk = free.pop()!;
        const piece = chunk.subarray(0, Math.min(CHUNK_BYTES, body.byteLength - position));
        try {
          body.read(position, piece);
        } catch {
          // The frame cannot be read (it should be held): the connection cannot stay in step.
          this.socket.destroy();
          return finish(false);
        }
        position += piece.byteLength;
        inFlight++;
        this.socket.write(piece, (error) => {
          inFlight--;
          free.push(chunk);
          if (error) return finish(false);
          if (position === body.byteLength && inFlight === 0) return finish(true);
          pump();
        });
      }
    };
    this.socket.write(header);
    pump();
    if (body.byteLength === 0) finish(true);
  }
}
