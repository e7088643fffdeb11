/**
 * Tensors as raw bytes: what the frame carries for each dtype, and how a
 * tensor is rebuilt from a view of the received buffer without per-element
 * conversion.
 * @module
 */
import type * as TfNamespace from '@tensorflow/tfjs';
import { SerializationError } from '../errors.js';
import { tf } from '../tf.js';
import { backendOfTensor, complexOnCpu, readTensorSync, tensorFromInfo, wasmHeapOf } from '../tf-internals.js';

type Tensor = TfNamespace.Tensor;
type NumericDType = 'float32' | 'int32' | 'bool' | 'complex64';

/** Numeric dtypes and the byte width of one element on the wire. */
const ELEMENT_BYTES: Readonly<Record<NumericDType, number>> = {
  float32: 4,
  int32: 4,
  bool: 1,
  complex64: 8,
};

/** Largest dimension accepted from the wire (tfjs indexes with int32). */
const MAX_DIM = 0x7fffffff;

/** The element width of `dtype`, or undefined for strings and unknown dtypes. */
export function elementBytes(dtype: string): number | undefined {
  return Object.prototype.hasOwnProperty.call(ELEMENT_BYTES, dtype) ? ELEMENT_BYTES[dtype as NumericDType] : undefined;
}

/** Throws unless `tensor` can be read now. */
export function checkReadable(tensor: Tensor): void {
  if (tensor.isDisposed) {
    throw new SerializationError(`cannot send a disposed tensor (shape [${tensor.shape}], dtype ${tensor.dtype}): send it before disposing it`);
  }
}

/** True when `tensor`'s bytes lie in the WASM heap of the active backend, where they can be read in place at any time. */
export function inActiveWasmHeap(tensor: Tensor): boolean {
  const backend = backendOfTensor(tensor);
  return tensor.dtype !== 'complex64' && tensor.dtype !== 'string' && wasmHeapOf(backend) !== undefined && backend === (tf.backend() as unknown);
}

/** True when the active backend keeps tensors in a WASM heap. */
export function activeBackendIsWasm(): boolean {
  return wasmHeapOf(tf.backend()) !== undefined;
}

/** A tensor whose memory is allocated but not yet written, and a fresh view of that memory. */
export interface ReservedTensor {
  tensor: Tensor;
  /** The tensor's bytes in the heap: a view valid only until the next tfjs call. */
  bytes(): Uint8Array;
}

/**
 * A float32, int32 or bool tensor of `shape` allocated on the active WASM
 * backend without writing it (the receiver fills it); undefined on other
 * backends and dtypes.
 * @throws SerializationError when `byteLength` does not match the shape.
 */
export function reserveTensor(dtype: string, shape: number[], byteLength: number): ReservedTensor | undefined {
  const wasm = wasmHeapOf(tf.backend());
  if (wasm === undefined || (dtype !== 'float32' && dtype !== 'int32' && dtype !== 'bool')) return undefined;
  const count = elementCount(shape);
  if (count * ELEMENT_BYTES[dtype] !== byteLength) {
    throw new SerializationError(`tensor of shape [${shape}] and dtype ${dtype} needs ${count * ELEMENT_BYTES[dtype]} bytes, the frame gives ${byteLength}`);
  }
  const tensor = tensorFromInfo(wasm.allocate(shape, dtype), wasm.backend);
  return {
    tensor,
    bytes: () => {
      const offset = wasm.offsetOf(tensor.dataId)!;
      return wasm.heap().subarray(offset, offset + byteLength);
    },
  };
}

/**
 * The bytes of a numeric tensor as they go on the wire (little-endian), as a
 * view wherever the backend allows: the WASM heap itself, or the CPU backend's
 * stored array. Copy the result at once: a later tfjs call may move the heap.
 */
export function tensorBytes(tensor: Tensor, byteLength: number): Uint8Array {
  checkReadable(tensor);
  if (byteLength === 0) return new Uint8Array(0);
  const wasm = tensor.dtype !== 'complex64' ? wasmHeapOf(backendOfTensor(tensor)) : undefined;
  if (wasm !== undefined) {
    // The WASM backend's readSync copies out of its heap; viewing the heap saves that copy.
    const offset = wasm.offsetOf(tensor.dataId);
    const heap = wasm.heap();
    if (typeof offset === 'number' && offset > 0 && offset + byteLength <= heap.byteLength) {
      return heap.subarray(offset, offset + byteLength);
    }
  }
  let values = readTensorSync(tensor) as ArrayBufferView;
  const Wanted = tensor.dtype === 'int32' ? Int32Array : tensor.dtype === 'bool' ? Uint8Array : Float32Array;
  if (!(values instanceof Wanted)) {
    // A backend that keeps this dtype in another array type (rare): convert.
    const items = values as unknown as ArrayLike<number>;
    values = Wanted === Uint8Array ? Uint8Array.from(items, (v) => (v ? 1 : 0)) : Wanted.from(items);
  }
  if (values.byteLength !== byteLength) {
    throw new SerializationError(`tensor of shape [${tensor.shape}] and dtype ${tensor.dtype} holds ${values.byteLength} bytes, expected ${byteLength}`);
  }
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/** The raw bytes of each string of a string tensor (tfjs strings are byte strings). */
export function tensorStringBytes(tensor: Tensor): Uint8Array[] {
  checkReadable(tensor);
  const values = readTensorSync(tensor) as ArrayLike<Uint8Array | string>;
  const out = new Array<Uint8Array>(values.length);
  const encoder = new TextEncoder();
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    out[i] = typeof v === 'string' ? encoder.encode(v) : v;
  }
  return out;
}

/** Number of elements of `shape`, checking every dimension. */
function elementCount(shape: unknown): number {
  if (!Array.isArray(shape)) throw new SerializationError('tensor shape must be an array');
  let count = 1;
  for (const dim of shape) {
    if (typeof dim !== 'number' || !Number.isInteger(dim) || dim < 0 || dim > MAX_DIM) {
      throw new SerializationError(`invalid tensor dimension ${String(dim)} in shape [${shape}]`);
    }
    count *= dim;
  }
  if (!Number.isSafeInteger(count)) throw new SerializationError(`tensor shape [${shape}] is too large`);
  return count;
}

/**
 * The values a tensor of `dtype` is built from: a typed array viewing
 * `frame[offset, offset + count * width)` when the address is aligned for the
 * element type, a copy otherwise. complex64 comes back interleaved (re, im).
 */
export function viewValues(dtype: NumericDType, frame: Uint8Array, offset: number, count: number): Float32Array | Int32Array | Uint8Array {
  if (count === 0) return dtype === 'int32' ? new Int32Array(0) : dtype === 'bool' ? new Uint8Array(0) : new Float32Array(0);
  switch (dtype) {
    case 'float32':
      return typedView(Float32Array, frame, offset, count);
    case 'int32':
      return typedView(Int32Array, frame, offset, count);
    case 'complex64':
      return typedView(Float32Array, frame, offset, count * 2);
    case 'bool':
      return boolView(frame.subarray(offset, offset + count));
  }
}

function typedView<A extends Float32Array | Int32Array>(
  Ctor: { new (buffer: ArrayBufferLike, byteOffset: number, length: number): A; new (length: number): A; BYTES_PER_ELEMENT: number },
  bytes: Uint8Array,
  offset: number,
  count: number,
): A {
  const start = bytes.byteOffset + offset;
  if (start % Ctor.BYTES_PER_ELEMENT === 0) return new Ctor(bytes.buffer, start, count);
  const copy = new Ctor(count);
  new Uint8Array(copy.buffer).set(bytes.subarray(offset, offset + count * Ctor.BYTES_PER_ELEMENT));
  return copy;
}

/** Makes every byte of a bool tensor's memory 0 or 1 (a foreign sender may send others), in place. */
export function normaliseBools(bytes: Uint8Array): void {
  for (let i = 0; i < bytes.length; i++) if (bytes[i]! > 1) bytes[i] = 1;
}

/** bool bytes are 0 or 1; anything else from a foreign sender is normalised (on a copy). */
function boolView(bytes: Uint8Array): Uint8Array {
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i]! > 1) return Uint8Array.from(bytes, (v) => (v ? 1 : 0));
  }
  return bytes;
}

/**
 * Rebuilds a numeric tensor from `byteLength` bytes at `offset` in the frame.
 * The caller has checked that the range lies inside the frame.
 */
export function tensorFromBytes(dtype: string, shape: number[], frame: Uint8Array, offset: number, byteLength: number): Tensor {
  const width = elementBytes(dtype);
  if (width === undefined) throw new SerializationError(`unknown tensor dtype '${dtype}'`);
  const count = elementCount(shape);
  if (count * width !== byteLength) {
    throw new SerializationError(`tensor of shape [${shape}] and dtype ${dtype} needs ${count * width} bytes, the frame gives ${byteLength}`);
  }
  const values = viewValues(dtype as NumericDType, frame, offset, count);
  if (dtype === 'complex64') return complexFromInterleaved(values as Float32Array, shape);
  return tf.tensor(values, shape, dtype as NumericDType);
}

/** Rebuilds a string tensor from the bytes (or strings) of its elements. */
export function tensorFromStrings(shape: number[], values: unknown): Tensor {
  const count = elementCount(shape);
  if (!Array.isArray(values) || values.length !== count) {
    throw new SerializationError(`string tensor of shape [${shape}] needs an array of ${count} values`);
  }
  for (const v of values) {
    if (!(v instanceof Uint8Array) && typeof v !== 'string') throw new SerializationError('string tensor values must be byte strings');
  }
  return tf.tensor(values as Uint8Array[], shape, 'string');
}

/**
 * complex64 from interleaved (re, im) pairs. tfjs keeps the two parts apart,
 * so this one dtype needs a pass over the elements. Backends without complex
 * kernels (WASM) still get a complex tensor: it is built on the CPU backend,
 * where it can be read and sent on.
 */
function complexFromInterleaved(interleaved: Float32Array, shape: number[]): Tensor {
  const count = interleaved.length / 2;
  const real = new Float32Array(count);
  const imag = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    real[i] = interleaved[2 * i]!;
    imag[i] = interleaved[2 * i + 1]!;
  }
  if (tf.getKernel('Complex', tf.getBackend())) {
    return tf.tidy(() => tf.complex(tf.tensor(real, shape), tf.tensor(imag, shape)));
  }
  const onCpu = complexOnCpu(real, imag, shape);
  if (onCpu === undefined) throw new SerializationError('complex64 tensors need the CPU backend, which is not registered');
  return onCpu;
}
