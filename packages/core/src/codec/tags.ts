/**
 * Tagged values in the envelope. Before packing, the encoder replaces every
 * tensor, Map, error and extension value by a stand-in ({@link Tagged}) whose
 * payload is plain data; msgpackr writes a stand-in as a tag (fixext 1 of the
 * tag's type, data byte 0) followed by its payload, and calls the readers here
 * when it meets a tag. Tensor readers need the frame being decoded and the
 * list of tensors made so far, which is the {@link DecodeSession}.
 * @module
 */
import { addExtension } from 'msgpackr';
import type * as TfNamespace from '@tensorflow/tfjs';
import { SerializationError } from '../errors.js';
import { errorFromWire, type WireError } from '../error-wire.js';
import { onExtension, type AnyCodecExtension } from './extensions.js';
import { BLOCK_ALIGN } from './frame.js';
import { tensorFromBytes, tensorFromStrings } from './tensor-data.js';

type Tensor = TfNamespace.Tensor;

/** Tag types of the codec's own values. */
export const EXT_TENSOR = 1;
export const EXT_MAP = 2;
export const EXT_ERROR = 3;
/** Types msgpackr itself writes (see docs/wire-format.md). */
export const EXT_UNDEFINED = 0x00;
const EXT_BIGINT = 0x42;
const EXT_SET = 0x73;
export const EXT_TYPED_ARRAY = 0x74;
const EXT_TIMESTAMP = 0xff;

/** A value written as a tag followed by `payload`. */
export class Tagged {
  constructor(readonly payload: unknown) {}
}
/** payload: `[dtype, shape, byteOffset, byteLength]`, or `['string', shape, bytes[]]`. */
export class TensorTag extends Tagged {}
/** payload: `[key0, value0, key1, value1, …]`. */
export class MapTag extends Tagged {}
/** payload: a {@link WireError}. */
export class ErrorTag extends Tagged {}

/** How the envelope scanner treats an extension type byte. */
export const ExtKind = {
  /** Not allowed in a frame. */
  Unknown: 0,
  /** `d4 TT 00` followed by one more value, the payload. */
  Prefix: 1,
  /** Self-contained data of any ext length. */
  Data: 2,
  /** `d4 00 00`: undefined. */
  Undefined: 3,
} as const;
/** Kind of every extension type byte, indexed by the unsigned byte. */
export const extKinds = new Uint8Array(256);
extKinds[EXT_UNDEFINED] = ExtKind.Undefined;
extKinds[EXT_BIGINT] = ExtKind.Data;
extKinds[EXT_TYPED_ARRAY] = ExtKind.Data;
extKinds[EXT_TIMESTAMP] = ExtKind.Data;
extKinds[EXT_SET] = ExtKind.Prefix;

/** A tensor block of a frame decoded as it arrives, and the tensor memory it goes to. */
export interface ReservedBlock {
  start: number;
  length: number;
  /** The tensor's memory: a view valid only until the next tfjs call. */
  bytes(): Uint8Array;
  bool: boolean;
}

/** Thrown while decoding an envelope whose frame must be gathered whole before it can be decoded. */
export class NotStreamable extends Error {}

/** State of the decode running now (decoding is synchronous; nested decodes save and restore it). */
export interface DecodeSession {
  /** The frame, or (decoding as it arrives) its header and envelope. */
  frame: Uint8Array;
  /** Length of the whole frame. */
  frameLength: number;
  /**
   * Decoding as the frame arrives: makes a tensor of `length` bytes at
   * `start` whose memory the rest of the frame will fill (throws
   * {@link NotStreamable} where it cannot).
   */
  reserve?: (dtype: string, shape: number[], start: number, length: number) => Tensor;
  /** Where the data section starts: the envelope's end rounded up to 8. */
  dataStart: number;
  context: unknown;
  /** Tensors made so far, disposed if the decode fails. */
  made: Tensor[];
  /** Payloads handed to extensions, which may hold tensors the result does not show. */
  payloads: unknown[];
}

let session: DecodeSession | undefined;

/** Runs `fn` (a msgpackr unpack) with `s` as the current decode session. */
export function withSession<T>(s: DecodeSession, fn: () => T): T {
  const outer = session;
  session = s;
  try {
    return fn();
  } finally {
    session = outer;
  }
}

function current(): DecodeSession {
  if (!session) throw new SerializationError('tensorbus tags can only be decoded through a tensorbus codec');
  return session;
}

function register(type: number, Class: new (payload: unknown) => Tagged, read: (payload: unknown) => unknown): void {
  addExtension({ type, Class, write: (tag: Tagged) => tag.payload, read });
  extKinds[type] = ExtKind.Prefix;
}

function isOffset(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

register(EXT_TENSOR, TensorTag, (descriptor) => {
  const s = current();
  if (!Array.isArray(descriptor) || typeof descriptor[0] !== 'string') throw new SerializationError('malformed tensor descriptor');
  const [dtype, shape] = descriptor as [string, number[]];
  let tensor: Tensor;
  if (dtype === 'string') {
    if (descriptor.length !== 3) throw new SerializationError('malformed string tensor descriptor');
    tensor = tensorFromStrings(shape, descriptor[2]);
  } else {
    const [, , offset, byteLength] = descriptor as unknown[];
    if (descriptor.length !== 4 || !isOffset(offset) || !isOffset(byteLength) || offset % BLOCK_ALIGN !== 0) {
      throw new SerializationError('malformed tensor descriptor (offset and length must be integers, the offset a multiple of 8)');
    }
    const start = s.dataStart + offset;
    if (byteLength > 0 && start + byteLength > s.frameLength) {
      throw new SerializationError(`tensor data [${start}, ${start + byteLength}) lies outside the ${s.frameLength}-byte message (truncated?)`);
    }
    tensor = s.reserve ? s.reserve(dtype, shape, start, byteLength) : tensorFromBytes(dtype, shape, s.frame, start, byteLength);
  }
  s.made.push(tensor);
  return tensor;
});

register(EXT_MAP, MapTag, (entries) => {
  if (!Array.isArray(entries) || entries.length % 2 !== 0) throw new SerializationError('malformed Map: expected [key, value, …]');
  const map = new Map<unknown, unknown>();
  for (let i = 0; i < entries.length; i += 2) map.set(entries[i], entries[i + 1]);
  return map;
});

register(EXT_ERROR, ErrorTag, (wire) => {
  if (wire === null || typeof wire !== 'object' || typeof (wire as WireError).message !== 'string') {
    throw new SerializationError('malformed error: expected an object with a string message');
  }
  return errorFromWire(wire as WireError);
});

/** A registered extension and the stand-in class its values become. */
export interface UserTag {
  ext: AnyCodecExtension;
  Tag: new (payload: unknown) => Tagged;
}
/** Every registered extension, in registration order. */
export const userTags: UserTag[] = [];

onExtension((ext) => {
  const Tag = class extends Tagged {};
  userTags.push({ ext, Tag });
  register(ext.type, Tag, (payload) => {
    const s = current();
    // An extension may read its tensors while it decodes: they must have arrived.
    if (s.reserve) throw new NotStreamable();
    s.payloads.push(payload);
    return ext.read(payload, s.context);
  });
});
