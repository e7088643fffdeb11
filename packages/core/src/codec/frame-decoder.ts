/**
 * Decodes a frame while it arrives: the header and envelope are read first,
 * every tensor they describe is allocated in the WASM heap at once, and the
 * transport then reads each tensor's bytes straight into that memory. A
 * 400 MB reply thus needs no 400 MB receive buffer beside the tensor.
 *
 * Frames this cannot place (tensors the WASM heap does not hold, extension
 * values, which may read their tensors while being decoded) are gathered
 * whole and decoded as usual. A malformed frame is read to its end (so the
 * connection stays in step) and {@link FrameDecoder.result} throws.
 * @module
 */
import type * as TfNamespace from '@tensorflow/tfjs';
import { acquireFrame } from '../buffer-pool.js';
import type { Frame } from '../owned-frame.js';
import { SerializationError } from '../errors.js';
import { tf } from '../tf.js';
import type { DeferredBytes } from '../transport/transport.js';
import type { RandomAccessSink } from '../transport/capabilities.js';
import { alignUp, envelopeLength, HEADER_BYTES, readHeader } from './frame.js';
import { OutgoingFrame } from './outgoing-frame.js';
import { scanEnvelope } from './scan.js';
import { NotStreamable, type DecodeSession, type ReservedBlock } from './tags.js';
import { normaliseBools, reserveTensor } from './tensor-data.js';

type Tensor = TfNamespace.Tensor;

/** What the decoder needs of its codec. */
export interface DecoderHooks {
  /** Unpacks the envelope `head[HEADER_BYTES, envelopeEnd)` in session `s`. */
  unpack(s: DecodeSession, envelopeEnd: number): unknown;
  /** Decodes a whole frame (the gathered fallback), taking its share. */
  decode(frame: Frame): unknown;
  /** Disposes tensors made while decoding that the value cannot reach. */
  disposeUnreachable(value: unknown, s: DecodeSession): void;
  /** The envelope may nest this deep. */
  maxLevels: number;
}

/** Bytes of padding read at a time. */
const SCRATCH_BYTES = 64 * 1024;

/** The streaming decode of one frame of a known size; a {@link FrameSink} for the transport. */
export class FrameDecoder implements RandomAccessSink {
  /** Bytes that came in order, through {@link target}. */
  private received = 0;
  /** Bytes that came by either way (in order, or at an offset through {@link targetAt}). */
  private arrived = 0;
  /** Header and envelope (and padding), until they are decoded. */
  private head: Uint8Array = new Uint8Array(HEADER_BYTES);
  private mode: 'head' | 'blocks' | 'whole' | 'skip' = 'head';
  private whole: Frame | undefined;
  private blocks: ReservedBlock[] = [];
  private blockIndex = 0;
  private scratch: Uint8Array | undefined;
  private session: DecodeSession | undefined;
  private value: unknown;
  private error: Error | undefined;
  /** The caller took the result: its tensors are the caller's. */
  private taken = false;
  private abandoned = false;
  private failed = false;

  constructor(readonly byteLength: number, private readonly context: unknown, private readonly hooks: DecoderHooks) {
    if (byteLength < HEADER_BYTES) this.skip(new SerializationError(`message of ${byteLength} bytes is shorter than the ${HEADER_BYTES}-byte header (truncated?)`));
  }

  /** True once every byte has arrived. */
  get complete(): boolean {
    return this.arrived === this.byteLength;
  }

  target(): Uint8Array {
    const at = this.received;
    if (this.mode === 'head') return this.head.subarray(at);
    if (this.mode === 'whole') return this.whole!.bytes.subarray(at);
    const block = this.blocks[this.blockIndex];
    if (block && at >= block.start) return block.bytes().subarray(at - block.start);
    const stop = block ? block.start : this.byteLength;
    this.scratch ??= new Uint8Array(SCRATCH_BYTES);
    return this.scratch.subarray(0, Math.min(SCRATCH_BYTES, stop - at));
  }

  advance(n: number): void {
    this.received += n;
    this.arrived += n;
    if (this.mode === 'head') {
      if (this.received === HEADER_BYTES && this.head.byteLength === HEADER_BYTES) this.growHead();
      if (this.mode === 'head' && this.received === this.head.byteLength) this.decodeHead();
    } else if (this.mode === 'blocks' || this.mode === 'skip') {
      while (this.blockIndex < this.blocks.length && this.received >= this.blocks[this.blockIndex]!.start + this.blocks[this.blockIndex]!.length) this.blockIndex++;
    }
    if (this.complete) this.finish();
  }

  /**
   * Memory for the bytes from `offset` on, once the head is decoded (every
   * tensor reserved); undefined before. Padding and bytes of a malformed
   * frame go into scratch memory.
   */
  targetAt(offset: number): Uint8Array | undefined {
    if (this.mode === 'head' || offset < this.received || offset >= this.byteLength) return undefined;
    if (this.mode === 'whole') return this.whole!.bytes.subarray(offset);
    // Few blocks, in order: the first that ends after `offset` holds it, or starts after it.
    const block = this.blocks.find((candidate) => candidate.start + candidate.length > offset);
    if (block && offset >= block.start) return block.bytes().subarray(offset - block.start);
    const stop = block ? block.start : this.byteLength;
    this.scratch ??= new Uint8Array(SCRATCH_BYTES);
    return this.scratch.subarray(0, Math.min(SCRATCH_BYTES, stop - offset));
  }

  advanceAt(_offset: number, n: number): void {
    this.arrived += n;
    if (this.complete) this.finish();
  }

  fail(): void {
    if (this.failed) return;
    this.failed = true;
    this.letGo();
  }

  /**
   * The decoded value, once complete; its tensors belong to the caller.
   * @throws SerializationError for a malformed frame (its tensors disposed).
   */
  result(): unknown {
    if (this.failed) throw new SerializationError('the message was cut off while it arrived');
    if (!this.complete) throw new SerializationError('the message has not fully arrived');
    if (this.taken) throw new SerializationError('the message was already taken');
    this.taken = true;
    if (this.error) throw this.error;
    if (this.mode !== 'whole') return this.value;
    const frame = this.whole!;
    this.whole = undefined;
    // Only this decode reads it: the codec takes the share and gives the memory back once decoded.
    return this.hooks.decode(frame);
  }

  /** The caller will not take the result: its tensors go once the transport is done with them. */
  abandon(): void {
    if (this.abandoned || this.taken) return;
    this.abandoned = true;
    if (this.complete) this.letGo();
  }

  /** After the 8-byte header: the head is the header, the envelope and its padding. */
  private growHead(): void {
    let length: number;
    try {
      length = envelopeLength(this.head);
    } catch (error) {
      return this.skip(error as Error);
    }
    if (HEADER_BYTES + length > this.byteLength) {
      return this.skip(new SerializationError(`envelope of ${length} bytes overruns a ${this.byteLength}-byte message (truncated?)`));
    }
    const head = new Uint8Array(Math.min(alignUp(HEADER_BYTES + length), this.byteLength));
    head.set(this.head);
    this.head = head;
  }

  /** Decodes the envelope and reserves every tensor's memory. */
  private decodeHead(): void {
    const twins = new Map<number, { length: number; tensor: Tensor }>();
    try {
      this.unpackHead((dtype, shape, start, length) => {
        // A tensor sent twice travels once: its second tensor shares the first one's memory.
        const twin = length > 0 ? twins.get(start) : undefined;
        if (twin && twin.length === length && twin.tensor.dtype === dtype) return tf.reshape(twin.tensor, shape);
        const reserved = reserveTensor(dtype, shape, length);
        if (!reserved) throw new NotStreamable();
        this.blocks.push({ start, length, bytes: reserved.bytes, bool: dtype === 'bool' });
        if (length > 0) twins.set(start, { length, tensor: reserved.tensor });
        return reserved.tensor;
      });
      // Empty tensors have nothing to read; the others must not overlap.
      this.blocks = this.blocks.filter((block) => block.length > 0).sort((a, b) => a.start - b.start);
      for (let i = 1; i < this.blocks.length; i++) {
        const previous = this.blocks[i - 1]!;
        if (previous.start + previous.length > this.blocks[i]!.start) throw new SerializationError('tensor blocks overlap');
      }
      this.mode = 'blocks';
    } catch (error) {
      this.letGo();
      this.blocks = [];
      if (!(error instanceof NotStreamable)) return this.skip(error as Error);
      this.whole = acquireFrame(this.byteLength);
      this.whole.bytes.set(this.head);
      this.mode = 'whole';
    }
  }

  /**
   * Takes the whole frame at once from an {@link OutgoingFrame} of this
   * process, each tensor sharing the memory of the one it was made from (no
   * copy; tfjs tensors are immutable). False, with nothing taken, when that
   * cannot be done: then write the bytes.
   */
  adopt(bytes: DeferredBytes): boolean {
    if (!(bytes instanceof OutgoingFrame) || this.arrived !== 0 || this.mode !== 'head' || bytes.byteLength !== this.byteLength) return false;
    const header = this.head;
    this.head = bytes.head;
    try {
      this.unpackHead((dtype, shape, start, length) => {
        const tensor = length === 0 ? reserveTensor(dtype, shape, 0)?.tensor : bytes.share(start, length, dtype, shape);
        if (!tensor) throw new NotStreamable();
        return tensor;
      });
    } catch {
      this.letGo();
      this.head = header;
      return false;
    }
    this.mode = 'blocks';
    this.received = this.arrived = this.byteLength;
    this.finish();
    return true;
  }

  /** Unpacks the envelope in `this.head`, making each tensor with `reserve`; throws for a malformed one. */
  private unpackHead(reserve: NonNullable<DecodeSession['reserve']>): void {
    const session: DecodeSession = { frame: this.head, frameLength: this.byteLength, dataStart: 0, context: this.context, made: [], payloads: [], reserve };
    this.session = session;
    const envelopeEnd = readHeader(this.head, this.byteLength);
    session.dataStart = alignUp(envelopeEnd);
    scanEnvelope(this.head, HEADER_BYTES, envelopeEnd, this.hooks.maxLevels);
    this.value = this.hooks.unpack(session, envelopeEnd);
  }

  /** Every byte is in: complete the tensors (a gathered frame is decoded when taken). */
  private finish(): void {
    if (this.mode === 'head') this.decodeHead(); // a frame that is all head
    if (this.mode === 'blocks') {
      for (const block of this.blocks) if (block.bool) normaliseBools(block.bytes());
      this.hooks.disposeUnreachable(this.value, this.session!);
    }
    if (this.abandoned) this.letGo();
  }

  /** Reads the rest of a malformed frame into scratch memory; `result` throws `error`. */
  private skip(error: Error): void {
    this.error = error instanceof SerializationError ? error : new SerializationError(`cannot decode message: ${error.message}`, { cause: error });
    this.mode = 'skip';
    this.blocks = [];
  }

  /** Disposes every tensor this decode made and gives back a gathered frame (a failure, or a result nobody takes). */
  private letGo(): void {
    for (const tensor of this.session?.made ?? []) if (!tensor.isDisposed) tensor.dispose();
    this.session = undefined;
    this.whole?.release();
    this.whole = undefined;
  }
}
