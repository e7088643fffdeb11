/**
 * Encodes values (tensors, errors, Maps, Sets, Dates, BigInts, typed arrays and
 * registered extensions, nested anywhere) into one frame, and back.
 *
 * @example
 * ```ts
 * const codec = createCodec({ maxMessageBytes: 64 << 20 });
 * const bytes = codec.encode({ x: tf.ones([2, 2]), step: 3 });
 * const { x, step } = codec.decode(bytes) as { x: tf.Tensor; step: number };
 * ```
 * @module
 */
import { addExtension, Packr } from 'msgpackr';
import type * as TfNamespace from '@tensorflow/tfjs';
import { SerializationError, TensorbusError } from '../errors.js';
import { errorFromWire, errorToWire, type WireError } from '../error-wire.js';
import { tf } from '../tf.js';
import { onExtension } from './extensions.js';
import { alignUp, HEADER_BYTES, readHeader, writeHeader } from './frame.js';
import { tensorBytes, tensorFromBytes, tensorFromStrings, tensorStrings } from './tensor-data.js';

type Tensor = TfNamespace.Tensor;

/** Limits that protect a worker from what arrives on the wire. */
export interface CodecLimits {
  /** Largest frame accepted or produced, in bytes. Default 2 GiB. */
  maxMessageBytes?: number;
  /** Deepest nesting of arrays, objects, Maps and Sets. Default 256. */
  maxDepth?: number;
}

/** Encodes values into frames and back. */
export interface Codec {
  /** Encodes `value`; throws {@link SerializationError} if it cannot be. */
  encode(value: unknown, context?: unknown): Uint8Array;
  /** Decodes a frame; throws {@link SerializationError} on bad bytes. Tensors in the result belong to the caller. */
  decode(bytes: Uint8Array, context?: unknown): unknown;
  readonly limits: Required<CodecLimits>;
}

/** Tag numbers of the codec's own extensions. */
export const EXT_TENSOR = 1;
export const EXT_MAP = 2;
export const EXT_ERROR = 3;

/** A Map on its way out: msgpackr writes plain Maps as msgpack maps, which decode as objects. */
class MapEntries {
  constructor(readonly entries: [unknown, unknown][]) {}
}

/** State of the one encode or decode running now (both are synchronous). */
interface Session {
  context: unknown;
  /** encode: tensor blocks collected, with their offsets relative to the data section. */
  blocks: Uint8Array[];
  dataBytes: number;
  /** decode: the frame and the tensors made so far (disposed if decoding fails). */
  frame: Uint8Array;
  dataStart: number;
  made: Tensor[];
}

let session: Session | undefined;

function current(): Session {
  if (!session) throw new SerializationError('tensorbus values can only be encoded through a tensorbus codec');
  return session;
}

addExtension({
  Class: tf.Tensor,
  type: EXT_TENSOR,
  write(tensor: Tensor) {
    const s = current();
    if (tensor.dtype === 'string') return [tensor.dtype, tensor.shape, tensorStrings(tensor)];
    const bytes = tensorBytes(tensor);
    const offset = s.dataBytes;
    s.blocks.push(bytes);
    s.dataBytes = alignUp(offset + bytes.byteLength);
    return [tensor.dtype, tensor.shape, offset, bytes.byteLength];
  },
  read(descriptor: unknown) {
    const s = current();
    if (!Array.isArray(descriptor) || typeof descriptor[0] !== 'string' || !Array.isArray(descriptor[1])) {
      throw new SerializationError('malformed tensor descriptor');
    }
    const [dtype, shape] = descriptor as [string, number[]];
    const tensor =
      dtype === 'string'
        ? tensorFromStrings(shape, descriptor[2])
        : tensorFromBytes(dtype, shape, s.frame, s.dataStart + Number(descriptor[2]), Number(descriptor[3]));
    s.made.push(tensor);
    return tensor;
  },
});

addExtension({
  Class: MapEntries,
  type: EXT_MAP,
  write: (value: MapEntries) => value.entries,
  read(entries: unknown) {
    if (!Array.isArray(entries) || entries.some((e) => !Array.isArray(e) || e.length !== 2)) {
      throw new SerializationError('malformed Map entries');
    }
    return new Map(entries as [unknown, unknown][]);
  },
});

addExtension({
  Class: Error,
  type: EXT_ERROR,
  write: (error: Error) => errorToWire(error),
  read(wire: unknown) {
    if (!wire || typeof wire !== 'object' || typeof (wire as WireError).message !== 'string') {
      throw new SerializationError('malformed error');
    }
    return errorFromWire(wire as WireError);
  },
});

onExtension((ext) =>
  addExtension({
    Class: ext.Class as unknown as new () => unknown,
    type: ext.type,
    write: (value: unknown) => ext.write(value, current().context),
    read: (data: unknown) => ext.read(data, current().context),
  }),
);

const packr = new Packr({ useRecords: false, moreTypes: true, mapsAsObjects: true });

/**
 * Returns `value` with every Map replaced by {@link MapEntries}, checking the
 * nesting depth on the way. Containers without Maps are returned as they are.
 */
function prepare(value: unknown, depth: number, maxDepth: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (depth > maxDepth) throw new SerializationError(`value is nested deeper than ${maxDepth} levels (a cycle?)`);
  if (Array.isArray(value)) {
    let out: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      if (item === null || typeof item !== 'object') continue;
      const prepared = prepare(item, depth + 1, maxDepth);
      if (prepared !== item) (out ??= value.slice())[i] = prepared;
    }
    return out ?? value;
  }
  if (value instanceof Map) {
    return new MapEntries([...value].map(([k, v]) => [prepare(k, depth + 1, maxDepth), prepare(v, depth + 1, maxDepth)]));
  }
  if (value instanceof Set) {
    let changed = false;
    const items = [...value].map((item) => {
      const prepared = prepare(item, depth + 1, maxDepth);
      changed ||= prepared !== item;
      return prepared;
    });
    return changed ? new Set(items) : value;
  }
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) return value;
  let out: Record<string, unknown> | undefined;
  for (const key of Object.keys(value)) {
    const item = (value as Record<string, unknown>)[key];
    if (item === null || typeof item !== 'object') continue;
    const prepared = prepare(item, depth + 1, maxDepth);
    if (prepared !== item) (out ??= { ...(value as Record<string, unknown>) })[key] = prepared;
  }
  return out ?? value;
}

/** Throws if a decoded value nests deeper than allowed. */
function checkDepth(value: unknown, depth: number, maxDepth: number): void {
  if (value === null || typeof value !== 'object' || value instanceof tf.Tensor || ArrayBuffer.isView(value)) return;
  if (depth > maxDepth) throw new SerializationError(`message nests deeper than ${maxDepth} levels`);
  let children: Iterable<unknown>;
  if (Array.isArray(value) || value instanceof Set) children = value;
  else if (value instanceof Map) children = [...value.keys(), ...value.values()];
  else if (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null) children = Object.values(value);
  else return; // Values made by extensions (RRefs, errors, dates) are not the sender's nesting.

  for (const child of children) checkDepth(child, depth + 1, maxDepth);
}

function asSerializationError(error: unknown, what: string): TensorbusError {
  if (error instanceof SerializationError) return error;
  if (error instanceof RangeError && /call stack/i.test(error.message)) {
    return new SerializationError(`${what}: value nests too deeply`, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new SerializationError(`${what}: ${message}`, { cause: error });
}

/** Creates a codec with the given limits. */
export function createCodec(limits: CodecLimits = {}): Codec {
  const resolved: Required<CodecLimits> = {
    maxMessageBytes: limits.maxMessageBytes ?? 2 ** 31 - 1,
    maxDepth: limits.maxDepth ?? 256,
  };

  function encode(value: unknown, context?: unknown): Uint8Array {
    const outer = session;
    const s: Session = { context, blocks: [], dataBytes: 0, frame: new Uint8Array(0), dataStart: 0, made: [] };
    session = s;
    let envelope: Uint8Array;
    try {
      envelope = packr.pack(prepare(value, 0, resolved.maxDepth));
    } catch (error) {
      throw asSerializationError(error, 'cannot encode value');
    } finally {
      session = outer;
    }
    const dataStart = alignUp(HEADER_BYTES + envelope.byteLength);
    const total = dataStart + s.dataBytes;
    if (total > resolved.maxMessageBytes) {
      throw new SerializationError(`message of ${total} bytes exceeds the limit of ${resolved.maxMessageBytes} bytes`);
    }
    const frame = new Uint8Array(total);
    writeHeader(frame, envelope.byteLength);
    frame.set(envelope, HEADER_BYTES);
    let offset = dataStart;
    for (const block of s.blocks) {
      frame.set(block, offset);
      offset = alignUp(offset + block.byteLength);
    }
    return frame;
  }

  function decode(bytes: Uint8Array, context?: unknown): unknown {
    if (!(bytes instanceof Uint8Array)) throw new SerializationError('can only decode a Uint8Array');
    if (bytes.byteLength > resolved.maxMessageBytes) {
      throw new SerializationError(`message of ${bytes.byteLength} bytes exceeds the limit of ${resolved.maxMessageBytes} bytes`);
    }
    const { start, end } = readHeader(bytes);
    const outer = session;
    const s: Session = { context, blocks: [], dataBytes: 0, frame: bytes, dataStart: alignUp(end), made: [] };
    session = s;
    try {
      const value = packr.unpack(bytes.subarray(start, end));
      checkDepth(value, 0, resolved.maxDepth);
      return value;
    } catch (error) {
      for (const tensor of s.made) tensor.dispose();
      throw asSerializationError(error, 'cannot decode message');
    } finally {
      session = outer;
    }
  }

  return { encode, decode, limits: resolved };
}

/** The codec with default limits. */
export const defaultCodec: Codec = createCodec();
