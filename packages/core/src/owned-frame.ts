/**
 * A frame's bytes together with one owner's share of their memory: what
 * travels across the Transport interface. Whoever holds a `Frame` holds a
 * share; `retain()` makes another holder's share (taken while this one is
 * held, so "released before it was sent" cannot be written), `release()`
 * gives this share up (a second call does nothing, so "freed twice" cannot be
 * written either), and the memory goes back to where it came from (the
 * buffer pool, another process's shared-memory segment) when the last share
 * is released. Plain bytes ({@link Frame.of}) have nothing to give back: the
 * garbage collector frees them.
 *
 * Ownership is never tracked beside the bytes (no table keyed by the array):
 * a function that takes a `Frame` takes a share, and a function that only
 * needs bytes for a moment takes `frame.bytes`.
 * @module
 */
import { SerializationError } from './errors.js';
import { Owned } from './owned.js';

/** What every share of one frame's memory knows. */
interface Memory {
  /** Something outside the shares may still read the memory: do not reuse it (see {@link Frame.pin}). */
  pinned: boolean;
}

/** Memory of plain bytes: never reused, so always as good as pinned. */
const PLAIN: Memory = { pinned: true };
const nothing = (): void => undefined;

/** One holder's share of a frame's bytes (see the module comment). */
export class Frame {
  readonly #share: Owned<Uint8Array>;
  readonly #memory: Memory;
  /** Length of the frame in bytes (readable after release, for messages). */
  readonly byteLength: number;

  private constructor(share: Owned<Uint8Array>, memory: Memory) {
    this.#share = share;
    this.#memory = memory;
    this.byteLength = share.value.byteLength;
  }

  /** Plain bytes as a frame: its release gives nothing back (the garbage collector frees them). */
  static of(bytes: Uint8Array): Frame {
    return new Frame(Owned.own(bytes, nothing), PLAIN);
  }

  /**
   * The first share of `bytes`: `giveBack` runs once, when the last share is
   * released, told whether the memory was pinned (then it must not be reused).
   */
  static own(bytes: Uint8Array, giveBack: (pinned: boolean) => void): Frame {
    const memory: Memory = { pinned: false };
    return new Frame(Owned.own(bytes, () => giveBack(memory.pinned)), memory);
  }

  /**
   * The bytes. Valid while this share is held.
   * @throws SerializationError after {@link release}: read bytes only through a share you hold.
   */
  get bytes(): Uint8Array {
    if (!this.#share.held) throw new SerializationError('read of a released frame: take a share (retain) while it is held');
    return this.#share.value;
  }

  /** True until this share is released. */
  get held(): boolean {
    return this.#share.held;
  }

  /**
   * Another holder's share of the same bytes (released on its own).
   * @throws SerializationError when this share was already released.
   */
  retain(): Frame {
    return new Frame(this.#share.retain(), this.#memory);
  }

  /** Gives up this share; the memory goes back once every share is released. Idempotent. */
  release(): void {
    this.#share.release();
  }

  /**
   * Says that something beside the shares may read the memory for as long as
   * it lives (a decoded tensor that views it, a client library's write queue):
   * when the last share goes it is left to the garbage collector, never
   * reused. A no-op on plain bytes.
   */
  pin(): void {
    if (this.#memory !== PLAIN) this.#memory.pinned = true;
  }
}

/** Releases `frame` after pinning it: for bytes handed to code that keeps no share but may read them later. */
export function letGoPinned(frame: Frame): void {
  frame.pin();
  frame.release();
}
