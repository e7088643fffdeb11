/**
 * Encodes values (tensors, errors, Maps, Sets, Dates, BigInts, typed arrays and
 * registered extensions, nested anywhere) into one frame, and back. The frame
 * layout is in docs/wire-format.md.
 *
 * @example
 * ```ts
 * const codec = createCodec({ maxMessageBytes: 64 << 20 });
 * const bytes = codec.encode({ x: tf.ones([2, 2]), step: 3 });
 * const { x, step } = codec.decode(bytes) as { x: tf.Tensor; step: number };
 * x.dispose(); // decoded tensors belong to the caller
 * ```
 * @module
 */
import { Packr } from 'msgpackr';
import { InvalidArgumentError, SerializationError, TensorbusError } from '../errors.js';
import { tf } from '../tf.js';
import { acquireFrame } from '../buffer-pool.js';
import { Frame } from '../owned-frame.js';
import { payloadFrame, type Payload } from '../transport/transport.js';
import { FrameDecoder } from './frame-decoder.js';
import { alignUp, HEADER_BYTES, readHeader, writeHeader } from './frame.js';
import { OutgoingFrame } from './outgoing-frame.js';
import { encodeState, prepare, type EncodeState } from './prepare.js';
import { scanEnvelope } from './scan.js';
import { withSession, type DecodeSession } from './tags.js';
import { activeBackendIsWasm, tensorBytes } from './tensor-data.js';
import { envVar } from '../env.js';

export { EXT_ERROR, EXT_MAP, EXT_TENSOR } from './tags.js';

/** Limits that protect a worker from what arrives on the wire. */
export interface CodecLimits {
  /** Largest frame accepted or produced, in bytes. Default 2 GiB − 1. */
  maxMessageBytes?: number;
  /**
   * Deepest nesting: an array, object, Map, Set, tensor or extension value
   * inside more than `maxDepth` of them is refused. Default 256.
   */
  maxDepth?: number;
}

/** Encodes values into frames and back. */
export interface Codec {
  /**
   * Encodes `value` into new plain bytes (the caller's, freed by the garbage
   * collector). `context` is handed to every extension's `write`. Throws
   * {@link SerializationError} if the value cannot be sent.
   */
  encode(value: unknown, context?: unknown): Uint8Array;
  /**
   * Encodes `value` into a {@link Frame} (pooled memory when large): the
   * caller's share; release it once handed to a transport.
   */
  encodeFrame(value: unknown, context?: unknown): Frame;
  /**
   * Decodes a frame; throws {@link SerializationError} on bad bytes, after
   * disposing any tensor it made. Tensors in the result belong to the caller.
   * Given a {@link Frame}, decode takes that share: it is released once
   * decoded (pinned first when a decoded tensor may view the bytes, so their
   * memory is never reused under it). Given plain bytes, tensors may view
   * them (do not modify them afterwards).
   */
  decode(bytes: Uint8Array | Frame, context?: unknown): unknown;
  /**
   * Encodes `value` for a transport: as {@link encodeFrame} does, except that a
   * frame holding at least {@link STREAM_MIN_BYTES} of tensor data comes back
   * as an {@link OutgoingFrame} whose tensor bytes are read only as they are
   * sent. Release either (`releaseOutgoing`) once the request or reply is handed over.
   */
  encodeOutgoing(value: unknown, context?: unknown): Frame | OutgoingFrame;
  /**
   * A decoder that takes a frame of `byteLength` bytes as it arrives, placing
   * tensor bytes straight into tensor memory; undefined when that would not
   * pay (frames under {@link STREAM_MIN_BYTES}, backends other than WASM).
   */
  decoder(byteLength: number, context?: unknown): FrameDecoder | undefined;
  /**
   * Decodes bytes, a frame (taken, as {@link decode} does), or deferred bytes made in this process (what an
   * in-process transport hands on), whose tensors are then shared with the
   * sender's instead of copied.
   */
  decodePayload(payload: Payload, context?: unknown): unknown;
  readonly limits: Readonly<Required<CodecLimits>>;
}

const streamMinFromEnv = Number(envVar('TENSORBUS_STREAM_MIN_BYTES'));
/**
 * Frames with at least this much tensor data are deferred: read out of tensor
 * memory as they are sent (over TCP), decoded as they arrive, and shared
 * in-process (default 1 MiB, `TENSORBUS_STREAM_MIN_BYTES`). Paths that need
 * a frame whole (shared memory between processes, the bus) read it into a
 * buffer first. Below it a copy costs less than the bookkeeping.
 */
export const STREAM_MIN_BYTES = Number.isSafeInteger(streamMinFromEnv) && streamMinFromEnv > 0 ? streamMinFromEnv : 2 ** 20;

// Objects of any size (variableMapSize), no records or structured-clone references either way.
// Byte strings are copied out of the frame (copyBuffers), so a decoded value never keeps a frame alive
// and a received frame can be reused once decoded.
const packr = new Packr({ useRecords: false, moreTypes: true, mapsAsObjects: true, variableMapSize: true, structuredClone: false, copyBuffers: true });

/** Backends whose tensors copy the values they are made from (so decoded tensors never view the frame). */
const COPYING_BACKENDS = new Set(['wasm', 'tensorflow', 'webgl', 'webgpu']);

/** Errors from extensions that carry their own meaning (an RRef already released) pass through. */
function asCodecError(error: unknown, what: string): TensorbusError {
  if (error instanceof TensorbusError) return error;
  if (error instanceof RangeError && /call stack/i.test(error.message)) {
    return new SerializationError(`${what}: the value nests too deeply`, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SerializationError(`${what}: ${message}`, { cause: error });
}

function tooLarge(bytes: number, limit: number): SerializationError {
  return new SerializationError(`message of ${bytes} bytes exceeds the limit of ${limit} bytes (maxMessageBytes): send large tensors in parts, or raise the limit on both sides`);
}

/** Copies every tensor's bytes into its block, and zeroes the padding (the frame may be reused memory). */
function writeBlocks(frame: Uint8Array, dataStart: number, st: EncodeState): void {
  let written = dataStart;
  for (let i = 0; i < st.tensors.length; i++) {
    const start = dataStart + st.offsets[i]!;
    frame.fill(0, written, start);
    // Read each tensor's bytes just before copying: a view of the WASM heap is only good until the next tfjs call.
    frame.set(tensorBytes(st.tensors[i]!, st.lengths[i]!), start);
    written = start + st.lengths[i]!;
  }
  frame.fill(0, written);
}

/**
 * Tensors made while decoding that the result cannot reach (a key repeated in
 * an object or Map drops a value) would leak: dispose them. Stops as soon as
 * every tensor is found, which for an RPC's arguments is at once.
 */
function disposeUnreachable(value: unknown, s: DecodeSession): void {
  const missing = new Set(s.made);
  const stack: unknown[] = [value, ...s.payloads];
  while (stack.length > 0 && missing.size > 0) {
    const item = stack.pop();
    if (item === null || typeof item !== 'object') continue;
    if (item instanceof tf.Tensor) {
      missing.delete(item);
    } else if (Array.isArray(item)) {
      for (let i = 0; i < item.length; i++) if (typeof item[i] === 'object') stack.push(item[i]);
    } else if (item instanceof Map) {
      for (const [k, v] of item) stack.push(k, v);
    } else if (item instanceof Set) {
      for (const v of item) stack.push(v);
    } else if (Object.getPrototypeOf(item) === Object.prototype) {
      for (const key in item) stack.push((item as Record<string, unknown>)[key]);
    }
  }
  for (const tensor of missing) tensor.dispose();
}

/**
 * Creates a codec with the given limits.
 *
 * @throws InvalidArgumentError for a limit that is not a (large enough) integer.
 * @example
 * ```ts
 * const codec = createCodec({ maxMessageBytes: 1 << 20, maxDepth: 32 });
 * codec.decode(codec.encode(new Map([[1, 'one']]))); // Map { 1 => 'one' }
 * ```
 */
export function createCodec(limits: CodecLimits = {}): Codec {
  const resolved: Required<CodecLimits> = {
    maxMessageBytes: limits.maxMessageBytes ?? 2 ** 31 - 1,
    maxDepth: limits.maxDepth ?? 256,
  };
  const { maxMessageBytes, maxDepth } = resolved;
  if (!Number.isSafeInteger(maxMessageBytes) || maxMessageBytes < 9) {
    throw new InvalidArgumentError(`maxMessageBytes must be an integer of at least 9, got ${maxMessageBytes}`);
  }
  if (!Number.isSafeInteger(maxDepth) || maxDepth < 0) throw new InvalidArgumentError(`maxDepth must be a non-negative integer, got ${maxDepth}`);
  // What an envelope of a value within maxDepth can nest to: a tagged container (Set, Map,
  // extension) takes two levels, the tag and its array; a tensor at the deepest level three
  // (tag, descriptor, shape), as does the end of an error's cause chain.
  const maxLevels = 2 * maxDepth + 3;

  /** Walks and packs `value`: the envelope, and where each tensor block goes. */
  function layout(value: unknown, context: unknown): { st: EncodeState; envelope: Uint8Array; dataStart: number; total: number } {
    const st = encodeState(context, maxDepth);
    let envelope: Uint8Array;
    try {
      const prepared = prepare(value, 0, st);
      if (HEADER_BYTES + st.dataBytes > maxMessageBytes) throw tooLarge(HEADER_BYTES + st.dataBytes, maxMessageBytes);
      envelope = packr.pack(prepared);
    } catch (error) {
      throw asCodecError(error, 'cannot encode value');
    }
    const envelopeEnd = HEADER_BYTES + envelope.byteLength;
    const dataStart = st.tensors.length === 0 ? envelopeEnd : alignUp(envelopeEnd);
    const total = dataStart + st.dataBytes;
    if (total > maxMessageBytes) throw tooLarge(total, maxMessageBytes);
    return { st, envelope, dataStart, total };
  }

  /** Writes the header, the envelope and the padding after it into `head`. */
  function writeHead(head: Uint8Array, envelope: Uint8Array, dataStart: number): void {
    writeHeader(head, envelope.byteLength);
    head.set(envelope, HEADER_BYTES);
    head.fill(0, HEADER_BYTES + envelope.byteLength, dataStart);
  }

  /** Writes the whole frame of a layout into `frame` (of its total length). */
  function writeFrame({ st, envelope, dataStart }: ReturnType<typeof layout>, frame: Uint8Array): void {
    writeHead(frame, envelope, dataStart);
    if (st.tensors.length === 0) return;
    try {
      writeBlocks(frame, dataStart, st);
    } catch (error) {
      throw asCodecError(error, 'cannot encode value');
    }
  }

  /** The whole frame of a layout, in a (pooled) frame; released again if writing it fails. */
  function writeOwned(laid: ReturnType<typeof layout>): Frame {
    const frame = acquireFrame(laid.total);
    try {
      writeFrame(laid, frame.bytes);
    } catch (error) {
      frame.release();
      throw error;
    }
    return frame;
  }

  function encode(value: unknown, context?: unknown): Uint8Array {
    const laid = layout(value, context);
    const frame = new Uint8Array(laid.total);
    writeFrame(laid, frame);
    return frame;
  }

  function encodeFrame(value: unknown, context?: unknown): Frame {
    return writeOwned(layout(value, context));
  }

  function encodeOutgoing(value: unknown, context?: unknown): Frame | OutgoingFrame {
    const laid = layout(value, context);
    if (!activeBackendIsWasm() || laid.st.dataBytes < STREAM_MIN_BYTES) return writeOwned(laid);
    const { st, envelope, dataStart, total } = laid;
    const head = new Uint8Array(dataStart);
    writeHead(head, envelope, dataStart);
    try {
      return new OutgoingFrame({ head, byteLength: total, tensors: st.tensors, starts: st.offsets.map((offset) => dataStart + offset), lengths: st.lengths });
    } catch (error) {
      throw asCodecError(error, 'cannot encode value');
    }
  }

  function decoder(byteLength: number, context?: unknown): FrameDecoder | undefined {
    if (byteLength < STREAM_MIN_BYTES || byteLength > maxMessageBytes || !activeBackendIsWasm()) return undefined;
    return frameDecoder(byteLength, context);
  }

  function decodePayload(payload: Payload, context?: unknown): unknown {
    if (payload instanceof Uint8Array || payload instanceof Frame) return decode(payload, context);
    const sharing = frameDecoder(payload.byteLength, context);
    if (sharing.adopt(payload)) return sharing.result();
    // A frame of its own: only this decode reads it, so it goes back once decoded.
    return decode(payloadFrame(payload), context);
  }

  function frameDecoder(byteLength: number, context: unknown): FrameDecoder {
    return new FrameDecoder(byteLength, context, {
      maxLevels,
      unpack: (s, envelopeEnd) => withSession(s, () => packr.unpack(s.frame.subarray(HEADER_BYTES, envelopeEnd))),
      decode: (frame) => decode(frame, context),
      disposeUnreachable,
    });
  }

  function decode(input: Uint8Array | Frame, context?: unknown): unknown {
    if (input instanceof Frame) return decodeOwned(input, context);
    if (!(input instanceof Uint8Array)) throw new SerializationError(`can only decode a Uint8Array, got ${input === null ? 'null' : typeof input}`);
    return decodeBytes(input, context).value;
  }

  /** Decodes a frame whose share this decode was given, and lets go of it. */
  function decodeOwned(frame: Frame, context: unknown): unknown {
    let viewed = false;
    try {
      const decoded = decodeBytes(frame.bytes, context);
      viewed = decoded.viewed;
      return decoded.value;
    } finally {
      // Tensors of a backend that does not copy may view the bytes: never reuse them under it.
      if (viewed) frame.pin();
      frame.release();
    }
  }

  /** Decodes `bytes`; `viewed` tells whether a decoded tensor may view them. */
  function decodeBytes(bytes: Uint8Array, context: unknown): { value: unknown; viewed: boolean } {
    if (bytes.byteLength > maxMessageBytes) throw tooLarge(bytes.byteLength, maxMessageBytes);
    const envelopeEnd = readHeader(bytes);
    scanEnvelope(bytes, HEADER_BYTES, envelopeEnd, maxLevels);
    const s: DecodeSession = { frame: bytes, frameLength: bytes.byteLength, dataStart: alignUp(envelopeEnd), context, made: [], payloads: [] };
    try {
      const value: unknown = withSession(s, () => packr.unpack(bytes.subarray(HEADER_BYTES, envelopeEnd)));
      if (s.made.length > 0) disposeUnreachable(value, s);
      return { value, viewed: s.made.length > 0 && !COPYING_BACKENDS.has(tf.getBackend()) };
    } catch (error) {
      for (const tensor of s.made) if (!tensor.isDisposed) tensor.dispose();
      throw asCodecError(error, 'cannot decode message');
    }
  }

  return { encode, encodeFrame, decode, encodeOutgoing, decoder, decodePayload, limits: Object.freeze(resolved) };
}

/** The codec with default limits. */
export const defaultCodec: Codec = createCodec();
