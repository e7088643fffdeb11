/**
 * The frame: an 8-byte header, a msgpack envelope, then the raw bytes of every
 * tensor, each block starting at a multiple of 8 from the frame start so the
 * receiver can view it in place. Layout in docs/wire-format.md.
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
  frame[3] = 0; // flags: none defined yet
  frame[4] = envelopeLength & 0xff;
  frame[5] = (envelopeLength >>> 8) & 0xff;
  frame[6] = (envelopeLength >>> 16) & 0xff;
  frame[7] = (envelopeLength >>> 24) & 0xff;
}

/** Checks the header and returns where the envelope ends (it starts at {@link HEADER_BYTES}). */
export function readHeader(frame: Uint8Array): number {
  if (frame.byteLength < HEADER_BYTES) {
    throw new SerializationError(`message of ${frame.byteLength} bytes is shorter than the ${HEADER_BYTES}-byte header (truncated?)`);
  }
  if (frame[0] !== MAGIC_0 || frame[1] !== MAGIC_1) throw new SerializationError('message is not a tensorbus frame (bad magic)');
  if (frame[2] !== FRAME_VERSION) {
    throw new SerializationError(`unsupported frame version ${frame[2]} (this build reads version ${FRAME_VERSION}): are both sides on the same tensorbus release?`);
  }
  if (frame[3] !== 0) throw new SerializationError(`unknown frame flags 0x${frame[3]!.toString(16)}`);
  const length = (frame[4]! | (frame[5]! << 8) | (frame[6]! << 16)) + frame[7]! * 0x1000000;
  const end = HEADER_BYTES + length;
  if (length === 0) throw new SerializationError('frame has an empty envelope');
  if (end > frame.byteLength) throw new SerializationError(`envelope of ${length} bytes overruns a ${frame.byteLength}-byte message (truncated?)`);
  return end;
}
