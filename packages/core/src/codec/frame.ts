/**
 * The frame: an 8-byte header, a msgpack envelope, then the raw bytes of every
 * tensor, each block starting at a multiple of 8 from the frame start so the
 * receiver can view it in place. Layout in docs/wire-format.md.
 * @module
 */
import { SerializationError } from '../errors.js';

/** 'T', 'B': the first two bytes of every frame. */
const MAGIC_0 = 0x54;
const MAGIC_1 = 0x42;
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

/** Checks the first 8 bytes (magic, version, flags) and returns the envelope's length. */
export function envelopeLength(header: Uint8Array): number {
  if (header.byteLength < HEADER_BYTES) {
    throw new SerializationError(`message of ${header.byteLength} bytes is shorter than the ${HEADER_BYTES}-byte header (truncated?)`);
  }
  if (header[0] !== MAGIC_0 || header[1] !== MAGIC_1) throw new SerializationError('message is not a tensorbus frame (bad magic)');
  if (header[2] !== FRAME_VERSION) {
    throw new SerializationError(`unsupported frame version ${header[2]} (this build reads version ${FRAME_VERSION}): are both sides on the same tensorbus release?`);
  }
  if (header[3] !== 0) throw new SerializationError(`unknown frame flags 0x${header[3]!.toString(16)}`);
  const length = (header[4]! | (header[5]! << 8) | (header[6]! << 16)) + header[7]! * 0x1000000;
  if (length === 0) throw new SerializationError('frame has an empty envelope');
  return length;
}

/**
 * Checks the header of a frame of `frameLength` bytes (default: all of
 * `frame`) and returns where the envelope ends (it starts at {@link HEADER_BYTES}).
 */
export function readHeader(frame: Uint8Array, frameLength = frame.byteLength): number {
  const length = envelopeLength(frame);
  const end = HEADER_BYTES + length;
  if (end > frameLength) throw new SerializationError(`envelope of ${length} bytes overruns a ${frameLength}-byte message (truncated?)`);
  return end;
}
