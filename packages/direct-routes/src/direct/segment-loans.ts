/**
 * The shared-memory segments between one direct connection and its peer:
 * frames lent to the peer (until it gives them back) and replies borrowed
 * from it (until they are given back).
 * @module
 */
import type { Frame } from '@tensorbus/core';
import { readSegmentRef, SEGMENT_REF_BYTES, type SegmentRef } from '../shm/shared-segments.js';

/** One connection's loans of shared-memory segments, both ways. */
export class SegmentLoans {
  /** Frames lent to the peer in shared memory (a share each), by segment id, until it gives them back. */
  private readonly lent = new Map<string, Frame>();
  /** Replies received in the peer's shared memory and not yet given back. */
  private borrowed = 0;

  /** Nothing is lent or borrowed (the connection may close for being idle). */
  get none(): boolean {
    return this.lent.size === 0 && this.borrowed === 0;
  }

  /** Records `frame` (in the segment `ref`) as lent to the peer, taking the caller's share: released once given back. */
  lend(ref: SegmentRef, frame: Frame): void {
    this.lent.get(ref.id)?.release();
    this.lent.set(ref.id, frame);
  }

  /** Takes a lent frame back (the peer refused it): its share comes back to the caller. */
  unlend(ref: SegmentRef): Frame | undefined {
    const frame = this.lent.get(ref.id);
    this.lent.delete(ref.id);
    return frame;
  }

  /** Counts a reply that lies in the peer's memory until the returned function (idempotent) says it was given back. */
  borrow(): () => void {
    this.borrowed++;
    let out = true;
    return () => {
      if (out) this.borrowed--;
      out = false;
    };
  }

  /** The peer gave back a segment it was lent (`body`, the give-back's reference, is released). */
  takeBack(body: Frame): void {
    if (body.byteLength === SEGMENT_REF_BYTES) {
      const bytes = body.bytes;
      const { id } = readSegmentRef(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0);
      const frame = this.lent.get(id);
      this.lent.delete(id);
      frame?.release();
    }
    body.release();
  }

  /**
   * The connection broke: every lent frame's share goes. Lent over a
   * connection that had opened (`delivered`), the frames are pinned: the
   * requests failed, nothing will read them again. (Before it opened nothing
   * was sent, and the requester may still send them another way, holding its
   * own share.)
   */
  dropAll(delivered: boolean): void {
    for (const frame of this.lent.values()) {
      if (delivered) frame.pin();
      frame.release();
    }
    this.lent.clear();
  }
}
