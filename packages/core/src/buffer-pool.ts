/**
 * Reused memory for large frames. A fresh multi-megabyte buffer costs a page
 * fault per 4 KiB the first time it is written (measured here: receiving 4 MB
 * into a fresh buffer took 7.2 ms, into a reused one 1.3 ms), so the codec
 * encodes large frames into pooled buffers and the NATS transport receives
 * large payloads into them; each goes back to the pool once nothing can read
 * it any more.
 *
 * Ownership rules:
 * - A transport owns the bytes handed to `request`/`publish`/`respond` and
 *   may release them once they are surely sent (the NATS data plane does, when
 *   the receiver confirms it has everything).
 * - A transport that received bytes only one decoder will ever see marks them
 *   with {@link markReceived}; the codec releases such a frame after decoding
 *   when no decoded value can view it (tensors on a backend that copies).
 *
 * - A transport that delivers bytes it does not own (another process's shared
 *   memory) registers how to give them back with {@link lendForeign}; the
 *   codec's release then returns them to their owner.
 *
 * A transport may also supply the memory of fresh large buffers
 * ({@link useBufferSource}): the NATS transport's shared-memory segments, so a
 * frame is encoded straight into memory its same-host receiver can map.
 *
 * Small buffers are never pooled. `TENSORBUS_BUFFER_POOL_BYTES` bounds the
 * memory kept free for reuse (default 1 GiB; 0 turns pooling off).
 * @module
 */

import { Owned } from './owned.js';

/** Buffers smaller than this are plain allocations. */
export const POOL_MIN_BYTES = 256 * 1024;

const limitFromEnv = Number(process.env.TENSORBUS_BUFFER_POOL_BYTES ?? 2 ** 30);
const maxFreeBytes = Number.isFinite(limitFromEnv) && limitFromEnv >= 0 ? limitFromEnv : 2 ** 30;

/** Free ArrayBuffers by size class (capacity 2^k). */
const free = new Map<number, ArrayBuffer[]>();
/** Buffers handed out by the pool, and the memory behind each. */
const lent = new WeakMap<Uint8Array, ArrayBuffer>();
/** Received buffers only one decoder will see. */
const received = new WeakSet<Uint8Array>();
/** Buffers owned elsewhere, and how to give each back. */
const foreign = new WeakMap<Uint8Array, () => void>();

/** Supplies the memory of fresh large buffers. */
export interface BufferSource {
  /** An ArrayBuffer of exactly `bytes` bytes, or undefined to use the JavaScript heap. */
  allocate(bytes: number): ArrayBuffer | undefined;
}
let source: BufferSource | undefined;

/** Makes `next` supply fresh large buffers (undefined: the JavaScript heap); returns the previous source. */
export function useBufferSource(next: BufferSource | undefined): BufferSource | undefined {
  const previous = source;
  source = next;
  return previous;
}
let freeBytes = 0;
let reused = 0;
let allocated = 0;
/** Pooled buffers handed out and not yet given back. */
let outstanding = 0;

function sizeClass(size: number): number {
  return Math.ceil(Math.log2(size));
}

/**
 * A buffer of exactly `size` bytes, reused when one is free. Its contents are
 * not zeroed: write all of it, or zero what you do not.
 */
export function acquireBuffer(size: number): Uint8Array {
  if (size < POOL_MIN_BYTES || maxFreeBytes === 0) return new Uint8Array(size);
  const k = sizeClass(size);
  let memory = free.get(k)?.pop();
  if (memory) {
    freeBytes -= memory.byteLength;
    reused++;
  } else {
    memory = source?.allocate(2 ** k) ?? new ArrayBuffer(2 ** k);
    allocated++;
  }
  const view = new Uint8Array(memory, 0, size);
  lent.set(view, memory);
  outstanding++;
  return view;
}

/**
 * {@link acquireBuffer} as an owned handle: the buffer goes back to the pool
 * when the last share of it is released (see owned.ts).
 */
export function acquireOwned(size: number): Owned<Uint8Array> {
  const buffer = acquireBuffer(size);
  return Owned.own(buffer, () => releaseBuffer(buffer));
}

/**
 * Gives `buffer` back for reuse. A no-op for buffers the pool did not lend,
 * and for a second release of the same one. Nothing may read or write it after.
 */
export function releaseBuffer(buffer: Uint8Array): void {
  const memory = lent.get(buffer);
  if (!memory) {
    const giveBack = foreign.get(buffer);
    foreign.delete(buffer);
    received.delete(buffer);
    giveBack?.();
    return;
  }
  lent.delete(buffer);
  received.delete(buffer);
  outstanding--;
  if (freeBytes + memory.byteLength > maxFreeBytes) return;
  const k = Math.log2(memory.byteLength);
  let list = free.get(k);
  if (!list) free.set(k, (list = []));
  list.push(memory);
  freeBytes += memory.byteLength;
}

/** Marks `buffer` as received bytes that only the decoder that gets them will ever read. */
export function markReceived(buffer: Uint8Array): void {
  if (lent.has(buffer) || foreign.has(buffer)) received.add(buffer);
}

/**
 * Registers `buffer` as memory owned elsewhere: {@link releaseBuffer} calls
 * `giveBack` (once) instead of pooling it.
 */
export function lendForeign(buffer: Uint8Array, giveBack: () => void): void {
  foreign.set(buffer, giveBack);
}

/** True (once) when `buffer` was marked received: the caller may then release it. */
export function takeReceived(buffer: Uint8Array): boolean {
  if (!received.has(buffer)) return false;
  received.delete(buffer);
  return true;
}

/** Counts of the pool: buffers allocated, reused, bytes kept free, and pooled buffers handed out and not given back. */
export function bufferPoolStats(): { allocated: number; reused: number; freeBytes: number; outstanding: number } {
  return { allocated, reused, freeBytes, outstanding };
}
