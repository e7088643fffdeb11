/**
 * Tensor ownership at the call boundary. Received tensors belong to the
 * receiver. On the callee, tensors that arrived as arguments and tensors the
 * function returned are disposed once the answer is sent, except `tf.Variable`s
 * and tensors the function marked with `tf.keep()` (that is how a function
 * keeps a tensor it stored, e.g. as a parameter). The tensors the call made
 * end with it too (call-tensors.ts).
 * @module
 */
import { defaultCodec, SerializationError, tf, type Frame } from '@tensorbus/core';
import type * as TfNamespace from '@tensorflow/tfjs';

type Tensor = TfNamespace.Tensor;

/** Calls `visit` for every tensor nested in `value` (arrays, plain objects, Maps, Sets). */
export function forEachTensor(value: unknown, visit: (tensor: Tensor) => void, depth = 0): void {
  if (value === null || typeof value !== 'object' || depth > 512) return;
  if (value instanceof tf.Tensor) {
    visit(value);
    return;
  }
  if (Array.isArray(value) || value instanceof Set) {
    for (const item of value) forEachTensor(item, visit, depth + 1);
  } else if (value instanceof Map) {
    for (const [k, v] of value) {
      forEachTensor(k, visit, depth + 1);
      forEachTensor(v, visit, depth + 1);
    }
  } else if (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null) {
    for (const key in value) forEachTensor((value as Record<string, unknown>)[key], visit, depth + 1);
  }
}

/** True when tensorbus may dispose `tensor` after a call: not a Variable, not kept, not disposed. */
export function isTransient(tensor: Tensor): boolean {
  return !tensor.isDisposed && !(tensor instanceof tf.Variable) && !tensor.kept;
}

/** Disposes the transient tensors nested in each of `values`, once each. */
export function disposeTransient(...values: unknown[]): void {
  const seen = new Set<Tensor>();
  for (const value of values) {
    forEachTensor(value, (tensor) => {
      if (!seen.has(tensor) && isTransient(tensor)) {
        seen.add(tensor);
        tensor.dispose();
      }
    });
  }
}

/**
 * Decodes a message of a protocol that carries no tensors (control and
 * membership messages, their replies): a tensor found in it is disposed at
 * once and the message refused, so hostile bytes cannot leave tensors behind.
 * A frame is taken (released once decoded).
 * @throws SerializationError when the bytes do not decode or carry a tensor.
 */
export function decodeWithoutTensors(bytes: Uint8Array | Frame): unknown {
  const value = defaultCodec.decode(bytes);
  let tensors = 0;
  forEachTensor(value, (tensor) => {
    tensors++;
    tensor.dispose();
  });
  if (tensors > 0) throw new SerializationError(`a control message carries no tensors (this one had ${tensors})`);
  return value;
}
