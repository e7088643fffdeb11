/**
 * A frame whose tensor bytes stay where they are until they are sent: the
 * header and envelope are written at once, each tensor block is copied out
 * of the WASM heap piece by piece as a transport reads it. A 400 MB argument
 * then never has a 400 MB transfer buffer beside it.
 *
 * The frame keeps every tensor it reads from alive (a reshape that shares its
 * memory, so the sender may dispose its own tensor at once) until its maker
 * releases it and every transport that reads it has let go.
 * @module
 */
import type * as TfNamespace from '@tensorflow/tfjs';
import { acquireFrame } from '../buffer-pool.js';
import { Frame } from '../owned-frame.js';
import { SerializationError } from '../errors.js';
import { Owned } from '../owned.js';
import { tf } from '../tf.js';
import type { DeferredBytes } from '../transport/transport.js';
import { inActiveWasmHeap, tensorBytes } from './tensor-data.js';

type Tensor = TfNamespace.Tensor;

/** Most tensors a frame may have to be written as views of where they lie. */
export const MAX_VIEW_BLOCKS = 64;

/** A tensor block of the frame: where it starts, how long it is, and where its bytes are read from. */
interface Block {
  start: number;
  length: number;
  /** A tensor sharing the sender's memory (read in place at each read)… */
  pin?: Tensor;
  /** …or bytes read once (backends that cannot be read in place). */
  bytes?: Uint8Array;
}

/** Sizes of a frame laid out by the codec. */
export interface FrameLayout {
  /** Header, envelope and the padding up to the first block. */
  head: Uint8Array;
  /** Total length of the frame. */
  byteLength: number;
  /** Tensors in block order, each block's start in the frame and its length. */
  tensors: Tensor[];
  starts: number[];
  lengths: number[];
}

/** A frame read as it is sent. */
export class OutgoingFrame implements DeferredBytes {
  readonly byteLength: number;
  /** Header, envelope and the padding up to the first block. */
  readonly head: Uint8Array;
  private blocks: Block[];
  /** The maker's share: released by {@link release}. */
  readonly #maker: Owned<OutgoingFrame>;
  /** Every share still held (the maker's included): a reader may be given a share while one is. */
  readonly #live = new Set<Owned<OutgoingFrame>>();
  #freed = false;
  /** Index of the block the last read ended in: reads are mostly sequential. */
  private cursor = 0;

  constructor(layout: FrameLayout) {
    this.byteLength = layout.byteLength;
    this.head = layout.head;
    this.blocks = layout.tensors.map((tensor, i) => {
      const block: Block = { start: layout.starts[i]!, length: layout.lengths[i]! };
      if (inActiveWasmHeap(tensor)) block.pin = tf.keep(tf.reshape(tensor, tensor.shape));
      else block.bytes = tensorBytes(tensor, block.length);
      return block;
    });
    this.#maker = Owned.own<OutgoingFrame>(this, () => this.free());
    this.#live.add(this.#maker);
  }

  read(position: number, target: Uint8Array): void {
    if (this.#freed) throw new SerializationError('the frame was released before it was sent');
    const end = position + target.byteLength;
    if (position < 0 || end > this.byteLength) throw new RangeError(`read of [${position}, ${end}) outside a ${this.byteLength}-byte frame`);
    let at = position;
    if (at < this.head.byteLength) {
      const n = Math.min(this.head.byteLength, end) - at;
      target.set(this.head.subarray(at, at + n));
      at += n;
    }
    if (this.cursor >= this.blocks.length || this.blocks[this.cursor]!.start > at) this.cursor = 0;
    while (at < end) {
      while (this.cursor < this.blocks.length && this.blocks[this.cursor]!.start + this.blocks[this.cursor]!.length <= at) this.cursor++;
      const block = this.blocks[this.cursor];
      const stop = Math.min(end, block ? (at < block.start ? block.start : block.start + block.length) : this.byteLength);
      if (!block || at < block.start) {
        target.fill(0, at - position, stop - position); // padding
      } else {
        // Read just before copying: a view of the WASM heap is only good until the next tfjs call.
        const bytes = block.bytes ?? tensorBytes(block.pin!, block.length);
        target.set(bytes.subarray(at - block.start, stop - block.start), at - position);
      }
      at = stop;
    }
  }

  /**
   * {@link DeferredBytes.views}: the head, each block's bytes where they lie
   * (the WASM heap itself), and zeros for the padding between. Undefined
   * when the frame has more than {@link MAX_VIEW_BLOCKS} tensors (copying
   * many small ones costs less than a long write list).
   */
  views(): Uint8Array[] | undefined {
    if (this.#freed) throw new SerializationError('the frame was released before it was sent');
    if (this.blocks.length > MAX_VIEW_BLOCKS) return undefined;
    const out: Uint8Array[] = [this.head];
    let at = this.head.byteLength;
    for (const block of this.blocks) {
      if (block.start > at) out.push(new Uint8Array(block.start - at));
      if (block.length > 0) out.push(block.bytes ?? tensorBytes(block.pin!, block.length));
      at = block.start + block.length;
    }
    if (this.byteLength > at) out.push(new Uint8Array(this.byteLength - at));
    return out;
  }

  /**
   * A tensor of `dtype` and `shape` sharing the memory of the block at
   * `start` of `length` bytes (a receiver in this process takes it without a
   * copy; tfjs tensors are immutable), or undefined when that block is not
   * kept in place.
   */
  share(start: number, length: number, dtype: string, shape: number[]): Tensor | undefined {
    const pin = this.blocks.find((block) => block.start === start && block.length === length)?.pin;
    if (!pin || pin.dtype !== dtype || pin.size !== shape.reduce((n, d) => n * d, 1)) return undefined;
    return tf.reshape(pin, shape);
  }

  toBytes(): Uint8Array {
    const frame = new Uint8Array(this.byteLength);
    this.read(0, frame);
    return frame;
  }

  toFrame(): Frame {
    const frame = acquireFrame(this.byteLength);
    try {
      this.read(0, frame.bytes);
    } catch (error) {
      frame.release();
      throw error;
    }
    return frame;
  }

  /**
   * A share of the frame for a transport that will read it later (a queued
   * write, an offer): the tensors stay until every share is released. Take
   * it while the frame is held — when the write is queued, not when its turn
   * comes.
   * @throws SerializationError when every share was already released.
   */
  retain(): Owned<OutgoingFrame> {
    for (const from of this.#live) {
      // A share released on its own (not through hold's function) is dropped here.
      if (!from.held) {
        this.#live.delete(from);
        continue;
      }
      const share = from.retain();
      this.#live.add(share);
      return share;
    }
    throw new SerializationError('the frame was released before it was sent');
  }

  /** {@link DeferredBytes.hold} as a share: the returned function releases it (once). */
  hold(): () => void {
    const share = this.retain();
    return () => this.drop(share);
  }

  /** Its maker is done with it: the tensors it keeps go once no transport reads it either. */
  release(): void {
    this.drop(this.#maker);
  }

  /** Gives up `share` (a no-op the second time). */
  private drop(share: Owned<OutgoingFrame>): void {
    this.#live.delete(share);
    share.release();
  }

  private free(): void {
    this.#freed = true;
    for (const block of this.blocks) block.pin?.dispose();
    this.blocks = [];
  }
}

/**
 * Releases its maker's share of `payload` (a deferred frame, or a frame
 * from `encodeOutgoing`) once handed to a transport; plain bytes belong to the
 * transport and need nothing.
 */
export function releaseOutgoing(payload: unknown): void {
  if (payload instanceof OutgoingFrame || payload instanceof Frame) payload.release();
}
