/**
 * Length-prefixed frames on a TCP stream, for the raw TCP peer: a 4-byte
 * little-endian length, then the payload. The reader keeps the chunks it
 * received in a list and joins those of one frame once it is complete (one
 * copy at most, none when a frame arrived in one chunk).
 * @module
 */
import type { Socket } from 'node:net';

/** Writes one frame of `payload` to `socket`. */
export function writeFrame(socket: Socket, payload: Buffer): void {
  const header = Buffer.allocUnsafe(4);
  header.writeUInt32LE(payload.length, 0);
  socket.cork();
  socket.write(header);
  socket.write(payload);
  socket.uncork();
}

/** Cuts a byte stream into frames and hands each payload to `onFrame`. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private have = 0;
  private need = -1;

  constructor(private readonly onFrame: (payload: Buffer) => void) {}

  /** Feeds the next chunk read from the socket. */
  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.have += chunk.length;
    for (;;) {
      if (this.need < 0) {
        if (this.have < 4) return;
        this.need = this.take(4).readUInt32LE(0);
      }
      if (this.have < this.need) return;
      const payload = this.take(this.need);
      this.need = -1;
      this.onFrame(payload);
    }
  }

  /** Removes the first `n` bytes (all present) and returns them as one buffer. */
  private take(n: number): Buffer {
    this.have -= n;
    const first = this.chunks[0];
    if (first && first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const pieces: Buffer[] = [];
    let missing = n;
    while (missing > 0) {
      const chunk = this.chunks[0]!;
      if (chunk.length <= missing) {
        pieces.push(chunk);
        this.chunks.shift();
        missing -= chunk.length;
      } else {
        pieces.push(chunk.subarray(0, missing));
        this.chunks[0] = chunk.subarray(missing);
        missing = 0;
      }
    }
    return Buffer.concat(pieces, n);
  }
}
