/**
 * The frame: a small header, a msgpack envelope, then the raw bytes of every
 * tensor, each aligned to 8 bytes from the frame start so the receiver can view
 * them in place. Layout in docs/wire-format.md.
 * @module
 */
import { SerializationError } from '../errors.js';

/** 'T', 'B': the first two bytes of every frame. */
export const MAGIC_0 = 0x54;
export const MAGIC_1 = 0x42;
/** Version of the frame layout. */
export const FRAME_VERSION = 1;
/** Bytes before the envelope. */
export const HEADER_BYTES = 8;
/** Every tensor block starts at a multiple of this from the frame start. */
export const BLOCK_ALIGN = 8;

/** Rounds `n` up to the block alignment. */
export function alignUp(n: number): number {
  return Math.ceil(n / BLOCK_ALIGN) * BLOCK_ALIGN;
}

/** Writes the header for an envelope of `envelopeLength` bytes. */
export function writeHeader(frame: Uint8Array, envelopeLength: number): void {
  frame[0] = MAGIC_0;
  frame[1] = MAGIC_1;
  frame[2] = FRAME_VERSION;
  frame[3] = 0;
  new DataView(frame.buffer, frame.byteOffset, HEADER_BYTES).setUint32(4, envelopeLength, true);
}

/** Checks the header and returns the envelope's byte range. */
export function readHeader(frame: Uint8Array): { start: number; end: number } {
  if (frame.byteLength < HEADER_BYTES) {
    throw new SerializationError(`message of ${frame.byteLength} bytes is shorter than the ${HEADER_BYTES}-byte header`);
  }
  if (frame[0] !== MAGIC_0 || frame[1] !== MAGIC_1) throw new SerializationError('message is not a tensorbus frame (bad magic)');
  if (frame[2] !== FRAME_VERSION) throw new SerializationError(`unsupported frame version ${frame[2]}`);
  const length = new DataView(frame.buffer, frame.byteOffset, HEADER_BYTES).getUint32(4, true);
  const end = HEADER_BYTES + length;
  if (end > frame.byteLength) throw new SerializationError(`envelope of ${length} bytes overruns a ${frame.byteLength}-byte message (truncated?)`);
  return { start: HEADER_BYTES, end };
}
