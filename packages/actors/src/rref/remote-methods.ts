/**
 * Which methods of an RRef's value a remote caller may run: the methods of
 * the user's own class (its own function fields and those of its prototypes,
 * up to the first built-in prototype). Never `Object.prototype` members
 * (`valueOf`, `toString`, `hasOwnProperty`, … would hand out the whole
 * state or nothing useful), never `constructor`, never `_private` or
 * `#private` names, never getters, never methods of built-in types or of
 * tensors (`dispose`, `print`, `assign` would let a caller free or change
 * the owner's data behind its back).
 * @module
 */
import { tf, UnknownFunctionError } from '@tensorbus/core';

/** Longest method name accepted from the wire. */
const MAX_METHOD_LENGTH = 128;

/** Prototypes whose methods are never callable remotely, besides native ones. */
const CLOSED_PROTOTYPES = new Set<object>([tf.Tensor.prototype, tf.Variable.prototype]);

const nativeCode = /\{\s*\[native code\]\s*\}\s*$/;

/** What {@link isClosed} found for each prototype seen (prototypes do not change; a class's source is read once). */
const closedKnown = new WeakMap<object, boolean>();

/** True for a prototype of a built-in type (its constructor is native code) or of tensors. */
function isClosed(prototype: object): boolean {
  if (CLOSED_PROTOTYPES.has(prototype)) return true;
  let closed = closedKnown.get(prototype);
  if (closed === undefined) {
    const ctor = Object.getOwnPropertyDescriptor(prototype, 'constructor')?.value as unknown;
    closed = typeof ctor === 'function' && nativeCode.test(Function.prototype.toString.call(ctor));
    closedKnown.set(prototype, closed);
  }
  return closed;
}

/** True for a name a remote caller may use as a method name. */
function isCallableMethodName(method: unknown): method is string {
  return typeof method === 'string' && method.length > 0 && method.length <= MAX_METHOD_LENGTH && method !== 'constructor' && !method.startsWith('_') && !method.startsWith('#');
}

/**
 * The method `method` of `target` bound to it, or UnknownFunctionError when
 * the value has no such method a remote caller may run.
 */
export function remoteMethodOf(target: unknown, method: unknown, owner: string): (...args: unknown[]) => unknown {
  if (isCallableMethodName(method) && target !== null && typeof target === 'object') {
    for (let o: object | null = target; o !== null && !isClosed(o); o = Object.getPrototypeOf(o) as object | null) {
      const descriptor = Object.getOwnPropertyDescriptor(o, method);
      if (descriptor === undefined) continue;
      if (typeof descriptor.value === 'function') return (descriptor.value as (...args: unknown[]) => unknown).bind(target);
      break;
    }
  }
  const name = typeof method === 'string' ? method.slice(0, MAX_METHOD_LENGTH) : String(typeof method);
  throw new UnknownFunctionError(`the value of this RRef on worker '${owner}' has no method '${name}' callable remotely (only methods of its own class; not Object.prototype members, constructor or _private names)`);
}
