/**
 * Frames in shared memory that are read while they are still being written.
 *
 * A large deferred frame (tensor bytes still in the WASM heap) must be copied
 * into a segment by its sender, then out of it by its receiver: two copies
 * of ~0.2 ms per 4 MB here, one after the other. A *filling* segment lets
 * them overlap on two cores: the sender announces the segment first, then
 * copies the frame in chunks and publishes after each how many bytes are in
 * (a 32-bit progress word just past the frame, in the segment itself); the
 * receiver copies each chunk out as soon as the word says it is there. The
 * sender writes only past the published count, the receiver reads only
 * below it, so neither ever sees the other's half-written bytes.
 *
 * The word is the sender's to write and the receiver's to read: a receiver
 * never writes into another process's memory. A word that says the sender
 * failed, or does not move for a while, fails the transfer (a responder
 * spins on a request's word for at most {@link REQUEST_STALL_MS}, then
 * refuses it; a requester waits for its reply's word with its event loop
 * free for up to {@link REPLY_STALL_MS}); a value past the frame's end
 * counts as the end. See docs/data-plane.md.
 * @module
 */
import { TransportError, type DeferredBytes, type Frame, type FrameSink } from '@tensorbus/core';
import { acquireFrame } from '@tensorbus/core/internal';
import type { SegmentRef, SharedSegments } from './shared-segments.js';
import type { PeerProcess } from './socket-peer.js';

/** Deferred frames at least this large fill while read; smaller ones are copied whole first (nothing to overlap). */
export const FILL_MIN_BYTES = 1024 * 1024;
/** Bytes the sender copies between two publications of its progress. */
export const FILL_CHUNK_BYTES = 256 * 1024;
/**
 * A responder refuses a request whose word has not moved for this long, ms
 * (it spins meanwhile, its event loop held: a sender that runs copies 64 MiB
 * in a few ms); the requester then sends it another way.
 */
export const REQUEST_STALL_MS = 50;
/** A responder refuses a request not whole after this long in all, ms (a word moved on just often enough must not hold it either). */
export const REQUEST_MAX_MS = 200;
/** A requester fails a call whose reply's word has not moved for this long, ms (a responder that died or hangs). */
export const REPLY_STALL_MS = 30_000;
/** The progress word's value once the sender failed to read its own bytes. */
const FILL_FAILED = -1;

/** Where the progress word of a frame of `length` bytes lies in its segment: the next 4-byte boundary. */
export function progressOffset(length: number): number {
  return Math.ceil(length / 4) * 4;
}

/** A frame placed in a segment of this process, announced before it is written. */
export interface Filling {
  /** The segment's frame (the caller's share: lend it, or release it). */
  frame: Frame;
  /** Names the frame for the receiver (its `length` is the payload's). */
  ref: SegmentRef;
  /**
   * Copies the payload into the frame chunk by chunk, publishing its
   * progress; call it right after the announcement went out. Returns the
   * error that stopped it (the word then says so), or undefined.
   */
  fill(): Error | undefined;
}

/**
 * `payload` placed in a fresh segment of `segments` with room for its
 * progress word, not yet written; undefined when it cannot be (too small to
 * gain, too large, or the pool gave heap memory).
 */
export function placeFilling(segments: SharedSegments, payload: DeferredBytes): Filling | undefined {
  const length = payload.byteLength;
  if (process.env.TENSORBUS_SHM_FILLING === '0' || length < FILL_MIN_BYTES || length > segments.maxFrameBytes) return undefined;
  const at = progressOffset(length);
  const frame = acquireFrame(at + 4);
  const whole = segments.refOf(frame.bytes);
  if (!whole) {
    frame.release();
    return undefined;
  }
  const progress = new Int32Array(frame.bytes.buffer, at, 1);
  // The segment may have carried another frame before: its receiver gave it back, so it is ours to reset.
  Atomics.store(progress, 0, 0);
  const bytes = frame.bytes;
  const fill = (): Error | undefined => {
    try {
      for (let done = 0; done < length; ) {
        const end = Math.min(length, done + FILL_CHUNK_BYTES);
        payload.read(done, bytes.subarray(done, end));
        Atomics.store(progress, 0, end);
        done = end;
      }
      return undefined;
    } catch (error) {
      Atomics.store(progress, 0, FILL_FAILED);
      return error as Error;
    }
  };
  return { frame, ref: { ...whole, length }, fill };
}

/** A filling frame of another process, mapped here. */
export interface FillingView {
  /** The frame's bytes (the receiver's share: releasing it gives the segment back). */
  frame: Frame;
  /** The sender's progress word. */
  progress: Int32Array;
}

/**
 * Maps the filling frame `ref` of `peer` (as {@link SharedSegments.receive}
 * does, with its checks); throws when the segment has no room for the word.
 */
export function receiveFilling(segments: SharedSegments, ref: SegmentRef, giveBack: () => void, peer: PeerProcess): FillingView {
  if (progressOffset(ref.length) + 4 > ref.size) throw new RangeError(`a filling frame of ${ref.length} bytes leaves no room for its progress in a segment of ${ref.size}`);
  const frame = segments.receive(ref, giveBack, peer);
  return { frame, progress: new Int32Array(frame.bytes.buffer, progressOffset(ref.length), 1) };
}

/** The sender's frame did not arrive whole: it failed, or stopped moving. */
export class FillingStalledError extends TransportError {
  override readonly name = 'FillingStalledError';
}

/** How long a receiver checks the word before it waits with the event loop free, ms. */
const SPIN_MS = 1;
/**
 * Once a word has not moved for this long, ms, the receiver sleeps between
 * two checks of it for {@link NAP_MS}: off the CPU the sender may need (two
 * processes can share one core; spinning alone put a tenth of 4 MB round
 * trips past 3 ms here, against 2.5 ms).
 */
const SPIN_BEFORE_NAP_MS = 0.05;
const NAP_MS = 0.02;
const napCell = new Int32Array(new SharedArrayBuffer(4));

/** Gives up the CPU for a moment (a futex wait on a cell nobody wakes). */
function nap(): void {
  Atomics.wait(napCell, 0, 0, NAP_MS);
}
/** How long it then checks the word on every turn of the event loop before checking every millisecond, ms. */
const EAGER_MS = 50;

/** Where a drained frame went: into `sink`, or whole into `frame` (the caller's share). */
export interface Drained {
  frame?: Frame;
  sink?: FrameSink;
}

/** Asks `sinkFor` for the frame's sink; a factory that throws gives the segment back before the error goes on. */
function sinkOf(view: FillingView, sinkFor: (() => FrameSink | undefined) | undefined): FrameSink | undefined {
  try {
    return sinkFor?.();
  } catch (error) {
    view.frame.release();
    throw error;
  }
}

/** Copies a filling frame out as it comes: into a sink, or nowhere (the frame is then used whole). */
class Drain {
  private at = 0;
  private seen = 0;
  private since = performance.now();
  private steps = 0;
  private readonly started = this.since;

  constructor(
    private readonly view: FillingView,
    private readonly sink: FrameSink | undefined,
    private readonly stallMs: number,
    private readonly maxMs = Infinity,
  ) {}

  /**
   * Takes what has arrived; true once all of it has. Throws
   * FillingStalledError when the sender failed or stopped for `stallMs`.
   * While `spinning`, naps first when nothing new came for a moment (a
   * caller that lets the event loop run between steps has waited already).
   */
  step(spinning = true): boolean {
    if (spinning && this.steps++ > 0 && Atomics.load(this.view.progress, 0) === this.seen && performance.now() - this.since > SPIN_BEFORE_NAP_MS) nap();
    const length = this.view.frame.byteLength;
    const word = Atomics.load(this.view.progress, 0);
    if (word < 0) throw new FillingStalledError('the sender failed to write the frame');
    const now = performance.now();
    if (word !== this.seen) {
      this.seen = word;
      this.since = now;
    } else if (word < length && now - this.since > this.stallMs) {
      throw new FillingStalledError(`the frame stopped at ${word} of ${length} bytes for ${this.stallMs} ms`);
    }
    if (word < length && now - this.started > this.maxMs) throw new FillingStalledError(`the frame was not whole after ${this.maxMs} ms`);
    // A word past the end counts as the end: the receiver never reads outside the frame.
    const ready = Math.min(word, length);
    if (this.sink) {
      const source = this.view.frame.bytes;
      while (this.at < ready) {
        const target = this.sink.target();
        const n = Math.min(target.byteLength, ready - this.at);
        target.set(source.subarray(this.at, this.at + n));
        this.sink.advance(n);
        this.at += n;
      }
    }
    this.at = ready;
    return ready === length;
  }

  /** Where the whole frame went: into the sink (the segment given back), else the frame is the caller's share. */
  done(): Drained {
    if (!this.sink) return { frame: this.view.frame };
    this.view.frame.release();
    return { sink: this.sink };
  }

  /** Lets go of the frame and fails the sink. */
  abandon(error: unknown): never {
    this.sink?.fail();
    this.view.frame.release();
    throw error;
  }
}

/**
 * Takes the filling frame `view` now, spinning while the sender copies:
 * into the sink `sinkFor` gives, if it gives one (the segment is then given
 * back), else waits and returns the whole frame (the caller's share). Throws
 * FillingStalledError (the sink failed, the segment given back) when the
 * word fails, stops for `stallMs`, or is not whole after `maxMs`: a
 * receiver that must not be held up long by its peer (the responder) passes
 * short ones. Whatever throws, the segment is given back.
 */
export function drainNow(view: FillingView, sinkFor: (() => FrameSink | undefined) | undefined, stallMs: number, maxMs?: number): Drained {
  const drain = new Drain(view, sinkOf(view, sinkFor), stallMs, maxMs);
  try {
    while (!drain.step());
  } catch (error) {
    drain.abandon(error);
  }
  return drain.done();
}

/**
 * {@link drainNow} without holding the event loop: it spins for a moment,
 * then checks on each turn of the loop, then every millisecond, failing only
 * when the word stops for `stallMs` (a requester whose responder is slow to
 * copy its reply, say while it collects garbage, waits for it).
 */
export async function drainSoon(view: FillingView, sinkFor: (() => FrameSink | undefined) | undefined, stallMs: number): Promise<Drained> {
  const drain = new Drain(view, sinkOf(view, sinkFor), stallMs);
  const start = performance.now();
  try {
    while (!drain.step(performance.now() - start < SPIN_MS)) {
      const waited = performance.now() - start;
      if (waited < SPIN_MS) continue;
      await new Promise<void>((resume) => (waited < EAGER_MS ? setImmediate(resume) : setTimeout(resume, 1)));
    }
  } catch (error) {
    drain.abandon(error);
  }
  return drain.done();
}
