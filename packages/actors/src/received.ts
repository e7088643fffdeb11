/**
 * The type of what arrives when a value of type `T` crosses the wire: what
 * the codec actually delivers, so that a result's type never promises more
 * than the value has. `rpcSync`, `rpcAsync`, `toHere()`, RRef proxies and
 * `RemoteModule.forward` resolve to `Received<R>`.
 * @module
 */
import type { tf } from '@tensorbus/core';

/** The key of the brand of values that cross the wire as themselves (RRefs). */
export const ARRIVES_AS_ITSELF: unique symbol = Symbol('tensorbus.arrivesAsItself');

/** A value that arrives as itself (an RRef arrives as an RRef to the same value): `Received` leaves its type alone. */
export interface ArrivesAsItself {
  readonly [ARRIVES_AS_ITSELF]: true;
}

type Primitive = string | number | boolean | bigint | symbol | null | undefined;
type AnyFunction = (...args: never[]) => unknown;

/**
 * What a value of type `T` arrives as, applied through arrays, tuples, Maps,
 * Sets, plain objects and promises:
 *
 * - a `tf.Variable` arrives as a `tf.Tensor` of its value (no `assign`, no `trainable`);
 * - a class instance arrives as a plain object of its own data fields: its
 *   methods stay behind (and `toJSON()`, when it has one, decides what is sent);
 * - an Error arrives as an `Error`;
 * - tensors, RRefs, primitives, Dates and typed arrays arrive as themselves;
 * - functions cannot be sent (a field holding one is not part of the result).
 *
 * Instances of a class given a codec with `registerExtension` arrive as
 * themselves, which a type cannot know: the type says plain object, the value
 * has more (cast it).
 *
 * @example
 * ```ts
 * class Net { w = tf.variable(tf.ones([2])); parameters() { return [this.w]; } }
 * const params = await net.rpcSync().parameters(); // tf.Tensor[], not tf.Variable[]
 * ```
 */
export type Received<T> = T extends Primitive
  ? T
  : T extends tf.Variable<infer R>
    ? tf.Tensor<R>
    : T extends tf.Tensor
      ? T
      : T extends ArrivesAsItself
        ? T
        : T extends PromiseLike<infer U>
          ? Received<U>
          : T extends AnyFunction
            ? never
            : T extends Date | ArrayBuffer | ArrayBufferView
              ? T
              : T extends Error
                ? Error
                : T extends ReadonlyMap<infer K, infer V>
                  ? Map<Received<K>, Received<V>>
                  : T extends ReadonlySet<infer V>
                    ? Set<Received<V>>
                    : T extends readonly unknown[]
                      ? { -readonly [I in keyof T]: Received<T[I]> }
                      : T extends { toJSON(): infer J }
                        ? Received<J>
                        : T extends object
                          ? { -readonly [K in keyof T as T[K] extends AnyFunction ? never : K]: Received<T[K]> }
                          : T; // unknown says nothing to map (a function called by its name)
