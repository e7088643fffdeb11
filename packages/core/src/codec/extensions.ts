/**
 * The codec's extension point: classes that travel as a tagged msgpack value.
 *
 * The actors package registers RRefs here. An extension's `write` and `read`
 * receive the per-message context passed to `encode`/`decode` (for RRefs: the
 * sending agent and the destination), so one registry serves every agent.
 *
 * Extension type numbers 1–15 are the codec's own (see docs/wire-format.md);
 * 16–100 are free for extensions, except 66 (0x42, big integers).
 * @module
 */
import { InvalidArgumentError } from '../errors.js';

/** A class that the wire format carries as a tagged value. */
export interface CodecExtension<T, W = unknown, C = unknown> {
  /** Tag number, 16–100 except 66. */
  type: number;
  /** Instances of this class (and subclasses) are written with `write`. */
  Class: abstract new (...args: never[]) => T;
  /**
   * Returns a plain, encodable value standing for `value`. It is encoded like
   * any other value, so it may hold tensors, Maps and other extensions.
   */
  write(value: T, context: C | undefined): W;
  /** Rebuilds the value from what `write` returned. Throwing fails the whole decode. */
  read(data: W, context: C | undefined): T;
}

/** An extension as the codec keeps it. */
export type AnyCodecExtension = CodecExtension<unknown, unknown, unknown>;

const registered = new Map<number, AnyCodecExtension>();
/** The registered extensions in registration order, replayed to each new listener. */
const ordered: AnyCodecExtension[] = [];
const listeners = new Set<(ext: AnyCodecExtension) => void>();

/**
 * Registers a class to travel as a tagged value in every message. Registering
 * the same class under the same type again does nothing.
 *
 * @example
 * ```ts
 * class Point { constructor(readonly x: number, readonly y: number) {} }
 * registerExtension<Point, [number, number]>({
 *   type: 16,
 *   Class: Point,
 *   write: (p) => [p.x, p.y],
 *   read: ([x, y]) => new Point(x, y),
 * });
 * ```
 * @throws InvalidArgumentError for a type outside 16–100, 66, or a type taken by another class.
 */
export function registerExtension<T, W, C>(extension: CodecExtension<T, W, C>): void {
  if (!Number.isInteger(extension.type) || extension.type < 16 || extension.type > 100) {
    throw new InvalidArgumentError(`codec extension type must be an integer from 16 to 100, got ${extension.type}`);
  }
  if (extension.type === 0x42) {
    throw new InvalidArgumentError('codec extension type 66 (0x42) is the wire format\'s big-integer type: pick another type from 16 to 100');
  }
  if (typeof extension.Class !== 'function' || typeof extension.write !== 'function' || typeof extension.read !== 'function') {
    throw new InvalidArgumentError(`codec extension ${extension.type} needs a Class, a write and a read function`);
  }
  const existing = registered.get(extension.type);
  if (existing) {
    if (existing.Class === extension.Class) return;
    throw new InvalidArgumentError(`codec extension type ${extension.type} is already taken by ${existing.Class.name}: pick another type from 16 to 100`);
  }
  const ext = extension as unknown as AnyCodecExtension;
  registered.set(extension.type, ext);
  ordered.push(ext);
  for (const listener of listeners) listener(ext);
}

/** @internal Calls `listener` for every registered extension, now and when registered later. */
export function onExtension(listener: (ext: AnyCodecExtension) => void): void {
  for (const ext of ordered) listener(ext);
  listeners.add(listener);
}
