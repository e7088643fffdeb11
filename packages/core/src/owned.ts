/**
 * Owned, reference-counted handles to memory on the data path (transfer
 * buffers, deferred frames). Each holder of the memory holds its own handle:
 * `retain()` makes a new owner from a live one, `release()` gives up that
 * handle's share (a second call on the same handle does nothing), and the
 * memory is freed when the last handle is released. So "released before it
 * was sent" cannot be written — whoever will send later takes its handle
 * when it queues, while the memory is surely alive — and "freed twice"
 * cannot either: a handle releases its share at most once.
 * @module
 */
import { SerializationError } from './errors.js';

/** The count shared by every handle of one piece of memory. */
interface Shares {
  live: number;
  free: (() => void) | undefined;
}

/** One owner's share of `value`; the value is freed when the last share is released. */
export class Owned<T> {
  #shares: Shares | undefined;

  private constructor(
    /** What is owned. Do not use it after {@link release}. */
    readonly value: T,
    shares: Shares,
  ) {
    this.#shares = shares;
  }

  /** The first handle of `value`; `free` runs (once) when its last handle is released. */
  static own<T>(value: T, free: () => void): Owned<T> {
    return new Owned(value, { live: 1, free });
  }

  /** True until this handle is released. */
  get held(): boolean {
    return this.#shares !== undefined;
  }

  /**
   * A new owner of the same value (released on its own).
   * @throws SerializationError when this handle was already released: take shares while you hold one.
   */
  retain(): Owned<T> {
    const shares = this.#shares;
    if (!shares) throw new SerializationError('retain() of a released handle: take a share while the memory is held');
    shares.live++;
    return new Owned(this.value, shares);
  }

  /** Gives up this handle's share; frees the value when it was the last. Idempotent per handle. */
  release(): void {
    const shares = this.#shares;
    if (!shares) return;
    this.#shares = undefined;
    if (--shares.live > 0) return;
    const free = shares.free;
    shares.free = undefined;
    free?.();
  }
}
