/**
 * A byte range of a payload, as deferred bytes a frame writer sends from
 * where they lie: a part of a striped reply (see lane-groups.ts) goes out
 * without a copy, and the range holds the payload's memory until written.
 * @module
 */
import { Frame, type DeferredBytes } from '@tensorbus/core';
import type { HeldPayload } from '@tensorbus/core/internal';

/** The views of `[offset, offset + length)` within `views` (laid end to end). */
function sliceViews(views: Uint8Array[], offset: number, length: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  let start = 0;
  for (const view of views) {
    const end = start + view.byteLength;
    const from = Math.max(offset, start);
    const to = Math.min(offset + length, end);
    if (from < to) out.push(view.subarray(from - start, to - start));
    start = end;
    if (start >= offset + length) break;
  }
  return out;
}

/**
 * Bytes `[offset, offset + length)` of `data`, which the caller checked lie
 * within it. Reading them needs `data` held: the writer's hold (through
 * `hold`) keeps it so.
 */
export function payloadRange(data: HeldPayload, offset: number, length: number): DeferredBytes {
  const range: DeferredBytes = {
    byteLength: length,
    read(position, target) {
      if (data instanceof Frame) target.set(data.bytes.subarray(offset + position, offset + position + target.byteLength));
      else data.read(offset + position, target);
    },
    toBytes() {
      const bytes = new Uint8Array(length);
      range.read(0, bytes);
      return bytes;
    },
    hold() {
      if (!(data instanceof Frame)) return data.hold();
      const share = data.retain();
      return () => share.release();
    },
    views() {
      const all = data instanceof Frame ? [data.bytes] : data.views?.();
      return all && sliceViews(all, offset, length);
    },
  };
  return range;
}
