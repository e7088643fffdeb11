/**
 * The tensors a value kept by an RRef holds, and how they are freed when the
 * owner drops the value. Unlike the call boundary (plain containers only), an
 * RRef's value is often a class instance: its own fields are walked too, with
 * arrays, Maps, Sets and plain objects, to a bounded depth and size, skipping
 * RRefs and framework objects (an agent referenced from a field must not make
 * every value it owns look held by this one).
 *
 * What a walk cannot see (`#private` fields, closures) a value holds only by
 * adoption: the tensors a registered class's constructor was given or made
 * are adopted by the instance it made, and live as long as it does.
 * @module
 */
import { tf } from '@tensorbus/core';

type Tensor = tf.Tensor;

/** Deepest nesting walked. */
const MAX_DEPTH = 16;
/** Most objects walked in one value. */
const MAX_OBJECTS = 50_000;

const opaque = new WeakSet<object>();
/** Tensors an object holds where a walk cannot see them (see the module comment). */
const adopted = new WeakMap<object, Set<Tensor>>();

/**
 * Makes `tensors` part of what `owner` holds, whether or not its fields show
 * them; a non-object owner adopts nothing.
 */
export function adoptTensors(owner: unknown, tensors: Iterable<Tensor>): void {
  if (owner === null || typeof owner !== 'object' || owner instanceof tf.Tensor) return;
  let set = adopted.get(owner);
  for (const tensor of tensors) {
    if (tensor.isDisposed) continue;
    if (set === undefined) adopted.set(owner, (set = new Set()));
    set.add(tensor);
  }
}

/** Marks `object` as never walked (agents, managers: they reference every value). */
export function markOpaque(object: object): void {
  opaque.add(object);
}

/** The tensors `value` holds, each once. */
export function heldTensors(value: unknown): Set<Tensor> {
  const found = new Set<Tensor>();
  const seen = new Set<object>();
  const walk = (node: unknown, depth: number): void => {
    if (node === null || typeof node !== 'object' || depth > MAX_DEPTH || seen.size >= MAX_OBJECTS) return;
    if (node instanceof tf.Tensor) {
      if (!node.isDisposed) found.add(node);
      return;
    }
    if (seen.has(node) || opaque.has(node) || ArrayBuffer.isView(node) || node instanceof ArrayBuffer || node instanceof Promise) return;
    seen.add(node);
    const own = adopted.get(node);
    if (own !== undefined) for (const tensor of own) if (!tensor.isDisposed) found.add(tensor);
    if (Array.isArray(node) || node instanceof Set) {
      for (const item of node) walk(item, depth + 1);
    } else if (node instanceof Map) {
      for (const [k, v] of node) {
        walk(k, depth + 1);
        walk(v, depth + 1);
      }
    } else {
      // Plain objects and class instances alike: their own fields, never getters of the prototype.
      for (const key of Object.keys(node)) {
        const descriptor = Object.getOwnPropertyDescriptor(node, key);
        if (descriptor && 'value' in descriptor) walk(descriptor.value, depth + 1);
      }
    }
  };
  try {
    walk(value, 0);
  } catch {
    // A value that throws when looked at (a revoked Proxy, a hostile iterator) keeps what was found so far.
  }
  return found;
}

/** Calls the value's own `dispose()` or `[Symbol.dispose]()`, if its class has one; its errors are swallowed (the value is going anyway). */
export function callDispose(value: unknown): void {
  if (value === null || typeof value !== 'object' || value instanceof tf.Tensor || Array.isArray(value)) return;
  const dispose = (value as { dispose?: unknown }).dispose ?? (value as { [Symbol.dispose]?: unknown })[Symbol.dispose];
  if (typeof dispose !== 'function') return;
  try {
    const result: unknown = dispose.call(value);
    if (result instanceof Promise) result.catch(() => undefined);
  } catch {
    // A failing dispose() must not keep the rest from being freed.
  }
}

/**
 * Frees an instance nobody will hold again (constructed for a call whose
 * reply carried a copy): its `dispose()` runs, then the tensors it holds are
 * disposed, its own `tf.Variable`s included, but not those a kept value (an
 * RRef's) holds too.
 */
export function freeInstance(value: unknown): void {
  callDispose(value);
  for (const tensor of heldTensors(value)) if (!tensor.kept) tensor.dispose();
}
