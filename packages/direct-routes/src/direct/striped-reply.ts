/**
 * One reply coming in parts over lanes (see reply-lanes.ts), put together
 * where it belongs as the parts arrive. With a reply sink that takes bytes at
 * any offset (a frame decoder, which places tensors in the WASM heap), each
 * part is read straight into the sink: the part at the sink's next in-order
 * byte through `target`/`advance` (the frame's head comes this way), any
 * other through `targetAt`/`advanceAt` once the sink can place it. A part
 * that arrives before then is staged in a buffer of its own and copied in as
 * soon as it can be. Without such a sink the parts are gathered into one
 * buffer (and copied into an in-order sink at the end).
 *
 * The caller checked each part (request, size, bounds, no overlap); this
 * file only places bytes.
 * @module
 */
import { isRandomAccess, type Frame, type FrameSink, type RandomAccessSink } from '@tensorbus/core';
import { acquireFrame, writeInto } from '@tensorbus/core/internal';
import { payloadRange } from './payload-range.js';

/** Where the bytes of one part go as they are read. */
export interface IncomingPart {
  /** Memory for the part's next bytes, never longer than what is left; valid only until other code runs. */
  target(): Uint8Array;
  /** `n` bytes were written at the start of the last target. The part's last bytes may complete its reply. */
  advance(n: number): void;
  /** Bytes of the part still to come. */
  readonly left: number;
}

/** How the reply ends: whole in `frame` where it had no sink, or in its sink (frame undefined). */
export type ReplyDone = (frame: Frame | undefined) => void;

/** Where a reply goes: a sink (read into straight if `direct`), a buffer of its own, or nowhere (refused). */
export type ReplyInto = { sink: FrameSink | undefined; direct: boolean } | 'nowhere';

/** A part read before the sink could place it. */
interface StagedPart {
  offset: number;
  frame: Frame;
}

/** Copies all of `frame` into `sink` in order (a failure fails the sink). */
function writeInOrder(sink: FrameSink, frame: Frame): void {
  writeInto(sink, payloadRange(frame, 0, frame.byteLength));
}

/** Copies `bytes` into `sink` at `offset`; false when the sink cannot place them yet. */
function writeAt(sink: RandomAccessSink, offset: number, bytes: Uint8Array): boolean {
  if (sink.targetAt(offset) === undefined) return false;
  for (let at = 0; at < bytes.byteLength; ) {
    const into = sink.targetAt(offset + at);
    if (!into) throw new Error(`the reply sink could not place byte ${offset + at}`);
    const n = Math.min(into.byteLength, bytes.byteLength - at);
    into.set(bytes.subarray(at, at + n));
    sink.advanceAt(offset + at, n);
    at += n;
  }
  return true;
}

/** Whether `sink` takes bytes at any offset. */
export function takesAnyOffset(sink: FrameSink | undefined): sink is RandomAccessSink {
  return isRandomAccess(sink);
}

/** One striped reply being put together. */
export class StripedReply {
  /** Bytes in their place (the sink or the gathered buffer), or passed over. */
  private placed = 0;
  /** Bytes the sink took in order, from the frame's start. */
  private inOrder = 0;
  /** A part is being read into the sink in order (only one may). */
  private inOrderBusy = false;
  private readonly staged: StagedPart[] = [];
  /** The gathered reply, where no sink takes bytes at any offset. */
  private gathered: Frame | undefined;
  private ended = false;

  private readonly sink: FrameSink | undefined;
  /** Its parts are passed over (it was refused). */
  readonly refused: boolean;

  /**
   * A reply of `total` bytes going `into` a sink (`direct`: reads may go
   * straight into its memory, which stays put while a read is under way), or
   * nowhere: its parts are passed over. `done` is called once, when every
   * byte is placed (never for a reply that goes nowhere).
   */
  constructor(readonly total: number, into: ReplyInto, private readonly done: ReplyDone) {
    this.sink = into === 'nowhere' ? undefined : into.sink;
    if (into !== 'nowhere' && !(into.direct && takesAnyOffset(into.sink))) this.gathered = acquireFrame(total);
    this.refused = into === 'nowhere';
  }

  /** Where the `length` bytes at `offset` go as they are read. */
  part(offset: number, length: number): IncomingPart {
    const gathered = this.gathered;
    if (gathered) return this.counted(length, (done) => gathered.bytes.subarray(offset + done, offset + length), () => undefined);
    const sink = this.sink as RandomAccessSink;
    if (offset === this.inOrder && !this.inOrderBusy) {
      this.inOrderBusy = true;
      return this.counted(
        length,
        (done) => sink.target().subarray(0, length - done),
        (at, n) => {
          sink.advance(n);
          this.inOrder += n;
          if (at + n === length) this.inOrderBusy = false;
        },
      );
    }
    if (sink.targetAt(offset) !== undefined) {
      return this.counted(
        length,
        (done) => {
          const into = sink.targetAt(offset + done);
          if (!into) throw new Error(`the reply sink could not place byte ${offset + done}`);
          return into.subarray(0, length - done);
        },
        (at, n) => sink.advanceAt(offset + at, n),
      );
    }
    return this.stagedPart(offset, length);
  }

  /** Lets go of everything (the lanes failed or closed before the reply was whole). */
  drop(): void {
    if (this.ended) return;
    this.ended = true;
    this.sink?.fail();
    this.gathered?.release();
    for (const { frame } of this.staged.splice(0)) frame.release();
  }

  /** A part whose next bytes go where `where(done)` says, `wrote(at, n)` told of each `n` written at `at` within it. */
  private counted(length: number, where: (done: number) => Uint8Array, wrote: (at: number, n: number) => void): IncomingPart {
    let done = 0;
    return {
      target: () => where(done),
      advance: (n) => {
        wrote(done, n);
        done += n;
        this.placed += n;
        if (done === length) this.placeStaged();
        this.endIfWhole();
      },
      get left() {
        return length - done;
      },
    };
  }

  /** A part read into a buffer of its own, copied in once the sink can place it. */
  private stagedPart(offset: number, length: number): IncomingPart {
    const frame = acquireFrame(length);
    let done = 0;
    return {
      target: () => frame.bytes.subarray(done),
      advance: (n) => {
        done += n;
        if (done < length) return;
        this.staged.push({ offset, frame });
        this.placeStaged();
        this.endIfWhole();
      },
      get left() {
        return length - done;
      },
    };
  }

  /** Copies in every staged part the sink can now place, in order where that is what it needs. */
  private placeStaged(): void {
    const sink = this.sink as RandomAccessSink | undefined;
    if (!sink || this.ended) return;
    for (let moved = true; moved && this.staged.length > 0; ) {
      moved = false;
      for (let i = 0; i < this.staged.length; i++) {
        const { offset, frame } = this.staged[i]!;
        const inOrder = offset === this.inOrder && !this.inOrderBusy;
        if (inOrder) writeInOrder(sink, frame);
        else if (!writeAt(sink, offset, frame.bytes)) continue;
        if (inOrder) this.inOrder += frame.byteLength;
        this.placed += frame.byteLength;
        this.staged.splice(i, 1);
        frame.release();
        moved = true;
        break;
      }
    }
  }

  /** Once every byte is placed: the reply is done (a gathered one copied into its sink, if it has one). */
  private endIfWhole(): void {
    if (this.ended || this.placed < this.total) return;
    this.ended = true;
    if (this.refused) return;
    const gathered = this.gathered;
    this.gathered = undefined;
    if (!gathered || !this.sink) return this.done(gathered);
    try {
      writeInOrder(this.sink, gathered);
    } finally {
      gathered.release();
    }
    this.done(undefined);
  }
}
