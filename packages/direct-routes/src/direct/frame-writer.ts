/**
 * Writes reply frames to one data-port connection, in order. A body of bytes
 * is written as it is. A deferred body (a frame whose tensor bytes are read
 * as they are sent) is written straight from the tensors' memory when the
 * socket is idle and the body and this process allow it
 * (`DeferredBytes.views`, `heap-writes.ts`); otherwise
 * it is copied piece by piece into a few chunk buffers, each refilled once
 * the socket has taken it, so a 400 MB reply needs 8 MiB of buffers instead
 * of 400 MB. Frames that come while one streams wait for it.
 *
 * A frame or deferred body is held (core's `holdPayload`, as the transport
 * holds a request's payload) when `write` is called — while its maker surely
 * holds it — not when its turn comes: its maker may release it as soon as
 * `write` returns, and the memory stays until the socket has written it.
 * Plain bytes are the writer's from then on.
 * @module
 */
import type { Socket } from 'node:net';
import { Frame, type DeferredBytes, type Payload } from '@tensorbus/core';
import { holdPayload } from '@tensorbus/core/internal';
import { COALESCE_BYTES } from './direct-protocol.js';
import { WRITE_FROM_HEAP } from './heap-writes.js';

/** The writer's hold on a body: readable until released (once written, or once the connection fails). */
type Held = ReturnType<typeof holdPayload>;
/** Size and number of the chunk buffers a deferred body streams through. */
const CHUNK_BYTES = 4 * 2 ** 20;
const CHUNKS = 2;

/** A frame waiting for the one that streams: its body is already owned. */
interface Queued {
  header: Buffer;
  body: Held;
  onWritten: (() => void) | undefined;
}

/** Gives up the writer's hold on a queued body. */
function letGo(body: Held): void {
  body.release();
}

/** The reply frames of one connection. */
export class FrameWriter {
  private streaming = false;
  private readonly waiting: Queued[] = [];
  private chunks: Uint8Array[] | undefined;
  /** Deferred bodies written from where their bytes lie, not through the chunk buffers. */
  fromHeap = 0;

  constructor(private readonly socket: Socket) {}

  /**
   * Writes `header` then `body`; `onWritten` is told once the socket has
   * taken all of it. Returns false (and writes nothing) when a frame or a
   * deferred body can no longer be read (its maker released it already).
   */
  write(header: Buffer, body: Payload, onWritten?: () => void): boolean {
    let owned: Queued['body'];
    try {
      owned = holdPayload(body);
    } catch {
      return false;
    }
    if (this.streaming || this.socket.destroyed) {
      if (this.socket.destroyed) {
        letGo(owned);
        return true;
      }
      this.waiting.push({ header, body: owned, onWritten });
      return true;
    }
    this.start({ header, body: owned, onWritten });
    return true;
  }

  private start({ header, body, onWritten }: Queued): void {
    if (!(body.data instanceof Frame)) return this.stream(header, body.data, body, onWritten);
    const bytes = body.data.bytes;
    const written = (error?: Error | null) => {
      // The socket no longer reads the memory, written or failed.
      letGo(body);
      if (!error) onWritten?.();
    };
    if (bytes.byteLength < COALESCE_BYTES) {
      this.socket.write(Buffer.concat([header, bytes]), written);
      return;
    }
    this.socket.cork();
    this.socket.write(header);
    this.socket.write(bytes, written);
    this.socket.uncork();
  }

  /** Starts the frames that waited, until one streams again; a failure drops the connection. */
  private next(): void {
    while (!this.streaming && this.waiting.length > 0) {
      const queued = this.waiting.shift()!;
      if (this.socket.destroyed) {
        letGo(queued.body);
        continue;
      }
      try {
        this.start(queued);
      } catch {
        // Runs in a socket callback: fail the connection, never the process.
        this.socket.destroy();
      }
    }
  }

  /**
   * Hands `header` and the body's bytes, where they lie, to the kernel in one
   * write when the socket has nothing else queued: the views go to libuv
   * before any other code runs (so none is detached first), and the memory
   * under them stays held until the socket has written it. Returns false,
   * having written nothing, where the body gives no views or the socket
   * would keep them queued in JavaScript.
   */
  private writeInPlace(header: Buffer, body: DeferredBytes, owned: Held, onWritten: (() => void) | undefined): boolean {
    if (!WRITE_FROM_HEAP || this.socket.writableLength > 0 || this.socket.connecting) return false;
    let views: Uint8Array[] | undefined;
    try {
      views = body.views?.();
    } catch {
      return false; // read piece by piece, which fails the connection the same way
    }
    if (views === undefined) return false;
    this.fromHeap++;
    const written = (error?: Error | null) => {
      owned.release();
      this.streaming = false;
      if (error) {
        this.socket.destroy();
      } else {
        try {
          onWritten?.();
        } catch {
          // The owner's bookkeeping failed: the frame was written; go on.
        }
      }
      this.next();
    };
    this.socket.cork();
    this.socket.write(header);
    for (let i = 0; i < views.length - 1; i++) this.socket.write(views[i]!);
    this.socket.write(views[views.length - 1]!, written);
    this.socket.uncork();
    return true;
  }

  private stream(header: Buffer, body: DeferredBytes, owned: Held, onWritten: (() => void) | undefined): void {
    this.streaming = true;
    if (this.writeInPlace(header, body, owned, onWritten)) return;
    this.chunks ??= Array.from({ length: CHUNKS }, () => new Uint8Array(CHUNK_BYTES));
    const free = [...this.chunks];
    let position = 0;
    let inFlight = 0;
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      owned.release();
      this.streaming = false;
      if (ok) {
        try {
          onWritten?.();
        } catch {
          // The owner's bookkeeping failed: the frame was written; go on.
        }
      } else {
        this.socket.destroy();
      }
      this.next();
    };
    const pump = () => {
      while (!done && free.length > 0 && position < body.byteLength) {
        const chunk = free.pop()!;
        const piece = chunk.subarray(0, Math.min(CHUNK_BYTES, body.byteLength - position));
        try {
          body.read(position, piece);
        } catch {
          // The frame cannot be read: the connection cannot stay in step.
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
