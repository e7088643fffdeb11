/**
 * Which methods of an RRef's value a remote caller may run: the methods of
 * the value's own class, found on the value and its prototype chain up to
 * (but excluding) the first built-in prototype. For a user's class these
 * are its methods and those of the classes it extends; for a `tf.Tensor`
 * they are the tensor's methods (`add`, `reshape`, `arraySync`, … which
 * tfjs's chaining API installs on `Tensor.prototype`), as PyTorch's
 * `rref.rpc_sync().size()` runs a tensor's method on its owner.
 *
 * Never `Object.prototype` members (`valueOf`, `hasOwnProperty`, … would
 * hand out the whole state or nothing useful), never methods of other
 * built-in types, never `constructor`, never `_private` or `#private`
 * names, never getters, and never a tensor's `dispose` (the RRef protocol
 * owns the value's lifetime: a caller must not free it behind the owner's
 * back; users release their RRef instead).
 * @module
 */
import { tf, UnknownFunctionError } from '@tensorbus/core';

/** Longest method name accepted from the wire. */
const MAX_METHOD_LENGTH = 128;

/** Methods of tensors a caller may not run: they end the value's life, which only its RRefs decide. */
const LIFETIME_METHODS = new Set<string>(['dispose']);

const nativeCode = /\{\s*\[native code\]\s*\}\s*$/;

/** What {@link isBuiltIn} found for each prototype seen (prototypes do not change; a class's source is read once). */
const builtInKnown = new WeakMap<object, boolean>();

/** True for a prototype of a built-in type (its constructor is native code): `Object.prototype`, `Array.prototype`, `Map.prototype`, …. */
function isBuiltIn(prototype: object): boolean {
  let builtIn = builtInKnown.get(prototype);
  if (builtIn === undefined) {
    const ctor = Object.getOwnPropertyDescriptor(prototype, 'constructor')?.value as unknown;
    builtIn = typeof ctor === 'function' && nativeCode.test(Function.prototype.toString.call(ctor));
    builtInKnown.set(prototype, builtIn);
  }
  return builtIn;
}

/** True for a name a remote caller may use as a method name. */
function isCallableMethodName(method: unknown): method is string {
  return typeof method === 'string' && method.length > 0 && method.length <= MAX_METHOD_LENGTH && method !== 'constructor' && !method.startsWith('_') && !method.startsWith('#');
}

/**
 * Runs the method `method` of `target` on it with `args` and returns what it
 * returns, or throws UnknownFunctionError when the value has no such method
 * a remote caller may run.
 */
export function runRemoteMethod(target: unknown, method: unknown, args: unknown[], owner: string): unknown {
  if (isCallableMethodName(method) && target !== null && typeof target === 'object' && !(target instanceof tf.Tensor && LIFETIME_METHODS.has(method))) {
    for (let o: object | null = target; o !== null && !isBuiltIn(o); o = Object.getPrototypeOf(o) as object | null) {
      const descriptor = Object.getOwnPropertyDescriptor(o, method);
      if (descriptor === undefined) continue;
      if (typeof descriptor.value === 'function') return Reflect.apply(descriptor.value as (...a: unknown[]) => unknown, target, args);
      break;
    }
  }
  const name = typeof method === 'string' ? method.slice(0, MAX_METHOD_LENGTH) : String(typeof method);
  throw new UnknownFunctionError(`the value of this RRef on worker '${owner}' has no method '${name}' callable remotely (only methods of its own class, a tensor's included; not Object.prototype members, constructor, _private names or a tensor's dispose)`);
}
