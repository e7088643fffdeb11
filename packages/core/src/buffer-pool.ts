/**
 * Reused memory for large frames. A fresh multi-megabyte buffer costs a page
 * fault per 4 KiB the first time it is written (measured here: receiving 4 MB
 * into a fresh buffer took 7.2 ms, into a reused one 1.3 ms), so the codec
 * encodes large frames into pooled buffers and the NATS transport receives
 * large payloads into them; each goes back to the pool once nothing can read
 * it any more.
 *
 * Ownership: the pool hands out memory only as a {@link Frame} (an owned,
 * reference-counted share, see owned-frame.ts); the memory comes back here
 * when the last share is released, unless it was pinned (something beside
 * the shares may still read it), and then the garbage collector frees it.
 * The pool keeps no table of what it lent: the frame's own release brings
 * the memory back, so memory cannot come back twice, nor while a holder
 * remains.
 *
 * A transport may also supply the memory of fresh large buffers
 * ({@link useBufferSource}): the NATS transport's shared-memory segments, so a
 * frame is encoded straight into memory its same-host receiver can map.
 *
 * Small buffers are never pooled. `TENSORBUS_BUFFER_POOL_BYTES` bounds the
 * memory kept free for reuse (default 1 GiB; 0 turns pooling off).
 * @module
 */

import { Frame } from './owned-frame.js';
import { envVar } from './env.js';

/** Buffers smaller than this are plain allocations. */
export const POOL_MIN_BYTES = 256 * 1024;

const limitFromEnv = Number(envVar('TENSORBUS_BUFFER_POOL_BYTES') ?? 2 ** 30);
const maxFreeBytes = Number.isFinite(limitFromEnv) && limitFromEnv >= 0 ? limitFromEnv : 2 ** 30;

/** Free ArrayBuffers by size class (capacity 2^k). */
const free = new Map<number, ArrayBuffer[]>();

/** Supplies the memory of fresh large buffers. */
export interface BufferSource {
  /** An ArrayBuffer of exactly `bytes` bytes, or undefined to use the JavaScript heap. */
  allocate(bytes: number): ArrayBuffer | undefined;
}
let source: BufferSource | undefined;

/**
 * Makes `next` supply fresh large buffers (undefined: the JavaScript heap);
 * returns the previous source. Buffers of the previous source are not reused
 * (those kept free are dropped, those still lent are not kept when they come
 * back): every frame handed out from now on lies in `next`'s memory, as a
 * same-host receiver that maps it needs.
 */
export function useBufferSource(next: BufferSource | undefined): BufferSource | undefined {
  const previous = source;
  source = next;
  if (next !== previous) {
    free.clear();
    freeBytes = 0;
  }
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
 * A frame of exactly `size` bytes, in reused memory when some is free; its
 * memory comes back to the pool when its last share is released. Its
 * contents are not zeroed: write all of it, or zero what you do not.
 * Small frames are plain bytes.
 */
export function acquireFrame(size: number): Frame {
  if (size < POOL_MIN_BYTES || maxFreeBytes === 0) return Frame.of(new Uint8Array(size));
  const k = sizeClass(size);
  let memory = free.get(k)?.pop();
  if (memory) {
    freeBytes -= memory.byteLength;
    reused++;
  } else {
    memory = source?.allocate(2 ** k) ?? new ArrayBuffer(2 ** k);
    allocated++;
  }
  outstanding++;
  const kept = memory;
  const from = source;
  return Frame.own(new Uint8Array(memory, 0, size), (pinned) => giveBack(kept, pinned, from));
}

/** The last share of a pooled frame was released: its memory can hold the next one, unless pinned or of a source no longer in use. */
function giveBack(memory: ArrayBuffer, pinned: boolean, from: BufferSource | undefined): void {
  outstanding--;
  if (pinned || from !== source || freeBytes + memory.byteLength > maxFreeBytes) return;
  const k = Math.log2(memory.byteLength);
  let list = free.get(k);
  if (!list) free.set(k, (list = []));
  list.push(memory);
  freeBytes += memory.byteLength;
}

/** Counts of the pool: buffers allocated, reused, bytes kept free, and pooled buffers handed out and not given back. */
export function bufferPoolStats(): { allocated: number; reused: number; freeBytes: number; outstanding: number } {
  return { allocated, reused, freeBytes, outstanding };
}
