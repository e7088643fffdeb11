/**
 * Tensors as raw bytes: what the frame carries for each dtype, and how a
 * tensor is rebuilt from a view of the received buffer without per-element
 * conversion.
 * @module
 */
import type * as TfNamespace from '@tensorflow/tfjs';
import { SerializationError } from '../errors.js';
import { tf } from '../tf.js';

type Tensor = TfNamespace.Tensor;
type DataType = TfNamespace.DataType;

/** Numeric dtypes and the byte width of one stored element. */
export const ELEMENT_BYTES: Record<Exclude<DataType, 'string'>, number> = {
  float32: 4,
  int32: 4,
  bool: 1,
  complex64: 8,
};

/** Bytes of a tensor's data as they go on the wire (little-endian). */
export function tensorBytes(tensor: Tensor): Uint8Array {
  if (tensor.isDisposed) throw new SerializationError('cannot send a disposed tensor');
  const values = tensor.dataSync() as Float32Array | Int32Array | Uint8Array;
  if (tensor.dtype === 'bool' && !(values instanceof Uint8Array)) {
    return Uint8Array.from(values as ArrayLike<number>, (v) => (v ? 1 : 0));
  }
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/** The strings of a string tensor. */
export function tensorStrings(tensor: Tensor): string[] {
  if (tensor.isDisposed) throw new SerializationError('cannot send a disposed tensor');
  return tensor.dataSync() as unknown as string[];
}

function elementCount(shape: number[]): number {
  let count = 1;
  for (const dim of shape) {
    if (!Number.isInteger(dim) || dim < 0) throw new SerializationError(`invalid tensor dimension ${dim}`);
    count *= dim;
  }
  return count;
}

/** A typed array over `bytes[offset, offset+length)`: a view when aligned, a copy otherwise. */
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

/** Rebuilds a numeric tensor from `byteLength` bytes at `offset` in the frame. */
export function tensorFromBytes(dtype: string, shape: number[], frame: Uint8Array, offset: number, byteLength: number): Tensor {
  const width = (ELEMENT_BYTES as Record<string, number | undefined>)[dtype];
  if (width === undefined) throw new SerializationError(`unknown tensor dtype '${dtype}'`);
  const count = elementCount(shape);
  if (count * width !== byteLength) {
    throw new SerializationError(`tensor of shape [${shape}] and dtype ${dtype} needs ${count * width} bytes, frame has ${byteLength}`);
  }
  if (offset < 0 || offset + byteLength > frame.byteLength) {
    throw new SerializationError('tensor data lies outside the message (truncated?)');
  }
  switch (dtype) {
    case 'float32':
      return tf.tensor(typedView(Float32Array, frame, offset, count), shape, 'float32');
    case 'int32':
      return tf.tensor(typedView(Int32Array, frame, offset, count), shape, 'int32');
    case 'bool':
      return tf.tensor(frame.slice(offset, offset + byteLength), shape, 'bool');
    default:
      return complexFromInterleaved(typedView(Float32Array, frame, offset, count * 2), shape);
  }
}

/** Rebuilds a string tensor. */
export function tensorFromStrings(shape: number[], values: unknown): Tensor {
  if (!Array.isArray(values) || values.some((v) => typeof v !== 'string')) {
    throw new SerializationError('string tensor values must be an array of strings');
  }
  if (elementCount(shape) !== values.length) {
    throw new SerializationError(`string tensor of shape [${shape}] needs ${elementCount(shape)} values, got ${values.length}`);
  }
  return tf.tensor(values as string[], shape, 'string');
}

/**
 * complex64 from interleaved (re, im) pairs. Backends without complex kernels
 * (WASM) still get a complex tensor: it is built on the CPU backend, where it
 * can be read and sent on.
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
  const engine = tf.engine();
  const cpu = engine.findBackend('cpu') as unknown as {
    makeTensorInfo(shape: number[], dtype: string, values: Float32Array): TfNamespace.TensorInfo;
    disposeIntermediateTensorInfo(info: TfNamespace.TensorInfo): void;
  };
  const complexKernel = tf.getKernel('Complex', 'cpu');
  if (!cpu || !complexKernel) throw new SerializationError('complex64 tensors need the CPU backend, which is not registered');
  const realInfo = cpu.makeTensorInfo(shape, 'float32', real);
  const imagInfo = cpu.makeTensorInfo(shape, 'float32', imag);
  const info = complexKernel.kernelFunc({
    inputs: { real: realInfo, imag: imagInfo },
    backend: cpu as unknown as TfNamespace.KernelBackend,
    attrs: {},
  }) as TfNamespace.TensorInfo;
  cpu.disposeIntermediateTensorInfo(realInfo);
  cpu.disposeIntermediateTensorInfo(imagInfo);
  return engine.makeTensorFromTensorInfo(info, cpu as unknown as TfNamespace.KernelBackend);
}
