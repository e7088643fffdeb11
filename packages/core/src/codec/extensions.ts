/**
 * The codec's extension point: classes that travel as a tagged msgpack value.
 *
 * The actors package registers RRefs here. An extension's `write` and `read`
 * receive the per-message context passed to `encode`/`decode` (for RRefs: the
 * sending agent and the destination), so one registry serves every agent.
 *
 * Extension type numbers 1–15 are the codec's own (see docs/wire-format.md);
 * 16–100 are free for extensions.
 * @module
 */
import { InvalidArgumentError } from '../errors.js';

/** A class that the wire format carries as a tagged value. */
export interface CodecExtension<T, W = unknown, C = unknown> {
  /** Tag number, 16–100. */
  type: number;
  /** Instances of this class (and subclasses) are written with `write`. */
  Class: abstract new (...args: never[]) => T;
  /** Returns a plain, encodable value standing for `value`. */
  write(value: T, context: C | undefined): W;
  /** Rebuilds the value from what `write` returned. */
  read(data: W, context: C | undefined): T;
}

const registered = new Map<number, CodecExtension<unknown, unknown, unknown>>();
const listeners = new Set<(ext: CodecExtension<unknown, unknown, unknown>) => void>();

/**
 * Registers a class to travel as a tagged value in every message.
 *
 * @example
 * ```ts
 * registerExtension({ type: 16, Class: Point, write: (p) => [p.x, p.y], read: ([x, y]) => new Point(x, y) });
 * ```
 */
export function registerExtension<T, W, C>(extension: CodecExtension<T, W, C>): void {
  if (!Number.isInteger(extension.type) || extension.type < 16 || extension.type > 100) {
    throw new InvalidArgumentError(`codec extension type must be an integer from 16 to 100, got ${extension.type}`);
  }
  const existing = registered.get(extension.type);
  if (existing) {
    if (existing.Class === extension.Class) return;
    throw new InvalidArgumentError(`codec extension type ${extension.type} is already taken by ${existing.Class.name}`);
  }
  const ext = extension as unknown as CodecExtension<unknown, unknown, unknown>;
  registered.set(extension.type, ext);
  for (const listener of listeners) listener(ext);
}

/** @internal Every registered extension, and those registered later. */
export function onExtension(listener: (ext: CodecExtension<unknown, unknown, unknown>) => void): void {
  for (const ext of registered.values()) listener(ext);
  listeners.add(listener);
}
