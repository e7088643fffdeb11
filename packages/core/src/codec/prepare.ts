/**
 * The encoder's walk over a value before packing: tensors, Maps, errors and
 * extension values become tagged stand-ins, tensors get their block in the
 * data section, and the nesting depth, cycles and unsendable values
 * (functions, symbols, promises…) are caught. Containers that hold none of
 * these are passed on as they are, so plain data is not copied.
 * @module
 */
import type * as TfNamespace from '@tensorflow/tfjs';
import { SerializationError } from '../errors.js';
import { errorToWire, MAX_WIRE_CAUSES } from '../error-wire.js';
import { tf } from '../tf.js';
import { alignUp } from './frame.js';
import { ErrorTag, MapTag, TensorTag, userTags } from './tags.js';
import { checkReadable, elementBytes, tensorStringBytes } from './tensor-data.js';

type Tensor = TfNamespace.Tensor;

/** What the walk collects for one encode. */
export interface EncodeState {
  readonly context: unknown;
  readonly maxDepth: number;
  /** Tensors whose bytes go in the data section, in block order. */
  readonly tensors: Tensor[];
  /** Each block's offset from the data section start (a multiple of 8) and its length. */
  readonly offsets: number[];
  readonly lengths: number[];
  /** End of the last block, from the data section start. */
  dataBytes: number;
  /** Tensor → block index, so a tensor sent twice travels once. */
  blockOf: Map<Tensor, number> | undefined;
}

/** A fresh state for one encode. */
export function encodeState(context: unknown, maxDepth: number): EncodeState {
  return { context, maxDepth, tensors: [], offsets: [], lengths: [], dataBytes: 0, blockOf: undefined };
}

/** Returns `value` ready for msgpackr; `depth` is the number of containers around it. */
export function prepare(value: unknown, depth: number, st: EncodeState): unknown {
  if (typeof value !== 'object') {
    if (typeof value === 'function' || typeof value === 'symbol') notEncodable(value);
    return value;
  }
  if (value === null) return value;
  if (depth > st.maxDepth) throw new SerializationError(`value nests deeper than ${st.maxDepth} levels (is it cyclic?)`);
  if (Array.isArray(value)) return prepareArray(value, depth, st);
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return prepareObject(value as Record<string, unknown>, depth, st);
  return prepareInstance(value, depth, st);
}

function prepareArray(array: unknown[], depth: number, st: EncodeState): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < array.length; i++) {
    const item = array[i];
    const type = typeof item;
    // Numbers and strings, the bulk of large arrays, cost one typeof each.
    if (type === 'object') {
      if (item === null) continue;
      const prepared = prepare(item, depth + 1, st);
      if (prepared !== item) (out ??= array.slice())[i] = prepared;
    } else if (type === 'function' || type === 'symbol') {
      notEncodable(item);
    }
  }
  return out ?? array;
}

function prepareObject(object: Record<string, unknown>, depth: number, st: EncodeState): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  const keys = Object.keys(object);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const item = object[key];
    const type = typeof item;
    if (type === 'object') {
      if (item === null) continue;
      const prepared = prepare(item, depth + 1, st);
      if (prepared === item) continue;
      out ??= { ...object };
      // defineProperty: a plain assignment to '__proto__' would set the prototype.
      if (key === '__proto__') Object.defineProperty(out, key, { value: prepared, enumerable: true, writable: true, configurable: true });
      else out[key] = prepared;
    } else if (type === 'function' || type === 'symbol') {
      notEncodable(item, key);
    }
  }
  return out ?? object;
}

function prepareInstance(value: object, depth: number, st: EncodeState): unknown {
  if (value instanceof tf.Tensor) return tensorTag(value, st);
  for (const { ext, Tag } of userTags) {
    if (value instanceof ext.Class) {
      const written = ext.write(value, st.context);
      if (written instanceof ext.Class) throw new SerializationError(`codec extension ${ext.type} (${ext.Class.name}) wrote an instance of its own class`);
      // One level deeper than the value: an extension that writes another extension value still ends.
      return new Tag(prepare(written, depth + 1, st));
    }
  }
  if (value instanceof Map) {
    const entries = new Array<unknown>(value.size * 2);
    let i = 0;
    for (const [k, v] of value) {
      entries[i++] = prepare(k, depth + 1, st);
      entries[i++] = prepare(v, depth + 1, st);
    }
    return new MapTag(entries);
  }
  if (value instanceof Set) {
    let changed = false;
    const items: unknown[] = [];
    for (const item of value) {
      const prepared = prepare(item, depth + 1, st);
      changed ||= prepared !== item;
      items.push(prepared);
    }
    return changed ? new Set(items) : value;
  }
  // The cause chain may nest as deep as the receiver allows (maxDepth + 1 levels).
  if (value instanceof Error) return new ErrorTag(errorToWire(value, Math.min(MAX_WIRE_CAUSES, st.maxDepth + 1 - depth)));
  // msgpackr writes these itself.
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer || value instanceof Date) return value;
  if (value instanceof Promise) throw new SerializationError('a Promise cannot be sent: await it and send its value');
  if (value instanceof WeakMap || value instanceof WeakSet || value instanceof WeakRef || value instanceof RegExp || value instanceof SharedArrayBuffer) {
    throw new SerializationError(`a ${value.constructor.name} cannot be sent: send the data it holds as arrays, objects or Maps`);
  }
  const toJSON = (value as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') return prepare(toJSON.call(value), depth + 1, st);
  // Any other class instance travels as a plain object of its own enumerable properties.
  return prepareObject(value as Record<string, unknown>, depth, st);
}

/** A Node Buffer view of `bytes`, which msgpackr writes as bin (a plain Uint8Array it writes as a typed array). */
const asBin: (bytes: Uint8Array) => Uint8Array =
  typeof Buffer === 'function' ? (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) : (bytes) => bytes;

function tensorTag(tensor: Tensor, st: EncodeState): TensorTag {
  checkReadable(tensor);
  if (tensor.dtype === 'string') return new TensorTag(['string', tensor.shape, tensorStringBytes(tensor).map(asBin)]);
  const width = elementBytes(tensor.dtype);
  if (width === undefined) throw new SerializationError(`tensors of dtype ${tensor.dtype} cannot be sent`);
  const byteLength = tensor.size * width;
  if (byteLength === 0) return new TensorTag([tensor.dtype, tensor.shape, 0, 0]);
  let block = st.blockOf?.get(tensor);
  if (block === undefined) {
    block = st.tensors.length;
    const offset = block === 0 ? 0 : alignUp(st.dataBytes);
    st.tensors.push(tensor);
    st.offsets.push(offset);
    st.lengths.push(byteLength);
    st.dataBytes = offset + byteLength;
    (st.blockOf ??= new Map()).set(tensor, block);
  }
  return new TensorTag([tensor.dtype, tensor.shape, st.offsets[block], byteLength]);
}

function notEncodable(value: unknown, key?: string): never {
  const where = key === undefined ? '' : ` (property '${key}')`;
  if (typeof value === 'function') {
    const name = value.name ? ` '${value.name}'` : '';
    throw new SerializationError(
      `a function${name}${where} cannot be sent: nothing received is ever run. Send data, or register it with remoteFunction and send its name`,
    );
  }
  throw new SerializationError(`a symbol (${String(value)})${where} cannot be sent: symbols are unique to one process`);
}
