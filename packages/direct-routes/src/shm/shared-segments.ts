/**
 * Shared-memory segments of the same-host data plane: this process's own
 * (fresh large buffers of the buffer pool, so frames are encoded straight into
 * memory a peer can map) and other processes' (mapped on first use, cached).
 *
 * A frame travels as a {@link SegmentRef}; the receiver maps the segment,
 * decodes from it, and gives it back (a release message) so the sender can
 * reuse it. A view the receiver never releases is given back when it is
 * garbage-collected, so memory a receiver still reads is never reused. See
 * docs/data-plane.md.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { Frame, payloadFrame, type Payload } from '@tensorbus/core';
import type { BufferSource, HeldPayload } from '@tensorbus/core/internal';
import type { ShmBinding } from './shm-native.js';
import { startTimeOf, type PeerProcess } from './socket-peer.js';

/** Where a frame lies: a segment of process `pid` (its descriptor `fd`), of `size` bytes; the frame is its first `length`. */
export interface SegmentRef {
  pid: number;
  fd: number;
  /** Tells segments apart that reuse one descriptor number. */
  id: string;
  size: number;
  length: number;
}

/** Bytes of a segment reference on the wire: pid u32, fd u32, id (8), size (2 × u32), length (2 × u32). */
export const SEGMENT_REF_BYTES = 32;

/** Frames up to this size go through shared memory by default; larger ones stream over TCP. */
export const DEFAULT_SHM_MAX_FRAME_BYTES = 64 * 2 ** 20;
/** Default bound of this process's own segments, and of the others' it keeps mapped. */
export const DEFAULT_SHM_BUDGET_BYTES = 2 ** 30;
/** Each own segment holds a file descriptor: at most this many at once. */
export const MAX_OWN_SEGMENTS = 256;

/** Writes `ref` at `offset`. */
export function writeSegmentRef(target: Buffer, offset: number, ref: SegmentRef): void {
  target.writeUInt32BE(ref.pid, offset);
  target.writeUInt32BE(ref.fd, offset + 4);
  target.write(ref.id, offset + 8, 8, 'hex');
  target.writeUInt32BE(Math.floor(ref.size / 2 ** 32), offset + 16);
  target.writeUInt32BE(ref.size >>> 0, offset + 20);
  target.writeUInt32BE(Math.floor(ref.length / 2 ** 32), offset + 24);
  target.writeUInt32BE(ref.length >>> 0, offset + 28);
}

/** `ref` on its own, as a frame body. */
export function segmentRefBytes(ref: SegmentRef): Buffer {
  const body = Buffer.allocUnsafe(SEGMENT_REF_BYTES);
  writeSegmentRef(body, 0, ref);
  return body;
}

/** Reads a reference written by {@link writeSegmentRef}. */
export function readSegmentRef(source: Buffer, offset: number): SegmentRef {
  return {
    pid: source.readUInt32BE(offset),
    fd: source.readUInt32BE(offset + 4),
    id: source.toString('hex', offset + 8, offset + 16),
    size: source.readUInt32BE(offset + 16) * 2 ** 32 + source.readUInt32BE(offset + 20),
    length: source.readUInt32BE(offset + 24) * 2 ** 32 + source.readUInt32BE(offset + 28),
  };
}

interface OwnSegment {
  fd: number;
  id: string;
}

/** This process's segments and its mappings of others'. */
export class SharedSegments implements BufferSource {
  private readonly own = new WeakMap<ArrayBuffer, OwnSegment>();
  private ownBytes = 0;
  private ownCount = 0;
  /** Closes a segment's descriptor once its memory is collected. */
  private readonly ownCollected = new FinalizationRegistry<{ fd: number; size: number }>(({ fd, size }) => {
    this.binding.close(fd);
    this.ownBytes -= size;
    this.ownCount--;
  });
  /** Others' segments by "pid:fd", least recently used first. */
  private readonly mapped = new Map<string, { id: string; buffer: ArrayBuffer }>();
  private mappedBytes = 0;
  /** Gives a received view back when it is collected unreleased. */
  private readonly viewCollected = new FinalizationRegistry<() => void>((giveBack) => giveBack());

  constructor(
    private readonly binding: Pick<ShmBinding, 'create' | 'open' | 'close'>,
    /** Frames larger than this are not put in segments. */
    readonly maxFrameBytes = DEFAULT_SHM_MAX_FRAME_BYTES,
    private readonly budgetBytes = DEFAULT_SHM_BUDGET_BYTES,
  ) {}

  /**
   * A fresh segment for the buffer pool, or undefined (too large, over the
   * budget of bytes or of descriptors, or refused by the system): the pool
   * then takes heap memory, which travels over TCP.
   */
  allocate(bytes: number): ArrayBuffer | undefined {
    if (bytes > this.maxFrameBytes || this.ownBytes + bytes > this.budgetBytes || this.ownCount >= MAX_OWN_SEGMENTS) return undefined;
    let fd: number;
    let buffer: ArrayBuffer;
    try {
      [fd, buffer] = this.binding.create(bytes);
    } catch {
      return undefined;
    }
    this.own.set(buffer, { fd, id: randomBytes(8).toString('hex') });
    this.ownBytes += bytes;
    this.ownCount++;
    this.ownCollected.register(buffer, { fd, size: bytes });
    return buffer;
  }

  /** The reference of `frame` when it lies at the start of one of this process's segments. */
  refOf(frame: Uint8Array): SegmentRef | undefined {
    const segment = frame.byteOffset === 0 ? this.own.get(frame.buffer as ArrayBuffer) : undefined;
    if (!segment) return undefined;
    return { pid: process.pid, fd: segment.fd, id: segment.id, size: frame.buffer.byteLength, length: frame.byteLength };
  }

  /**
   * `payload` for a same-host route: a frame (a new share, the caller's to
   * release), deferred bytes small enough for a segment read into one (a
   * segment must hold the frame whole), or larger deferred bytes as they are;
   * `ref` is the segment the frame lies in, if any. Plain bytes never go as
   * a reference: only a share says their memory stays until given back.
   */
  place(payload: Payload): { data: HeldPayload; ref: SegmentRef | undefined } {
    const whole = payload instanceof Uint8Array || payload instanceof Frame || payload.byteLength <= this.maxFrameBytes;
    const data = whole ? payloadFrame(payload) : payload;
    return { data, ref: data instanceof Frame && !(payload instanceof Uint8Array) ? this.refOf(data.bytes) : undefined };
  }

  /**
   * The frame `ref` points at in a segment of `peer`, the process shown to
   * hold the other end of the connection `ref` came on (see socket-peer.ts),
   * as the caller's share: releasing its last share (the codec does, after
   * decoding) calls `giveBack` once, as does its collection; a pinned frame
   * (a decoded tensor views it) is given back only by its collection.
   * Throws when `ref` names another process, or the segment cannot be mapped.
   */
  receive(ref: SegmentRef, giveBack: () => void, peer: PeerProcess): Frame {
    // A reference may only name its sender's own memory: never a third process's.
    if (ref.pid !== peer.pid) throw new RangeError(`a reference from process ${peer.pid} names process ${ref.pid}`);
    if (ref.length > ref.size) throw new RangeError(`a frame of ${ref.length} bytes cannot lie in a segment of ${ref.size}`);
    const view = new Uint8Array(this.map(ref, peer), 0, ref.length);
    // What the registry holds must not refer to the view, or it is never collected.
    const state = { given: false };
    const give = () => {
      if (state.given) return;
      state.given = true;
      giveBack();
    };
    const token = {};
    this.viewCollected.register(view, give, token);
    return Frame.own(view, (pinned) => {
      if (pinned) return;
      this.viewCollected.unregister(token);
      give();
    });
  }

  /**
   * Drops the cached mappings of process `pid` (its connection closed): each
   * is unmapped once no view of it is left, so a peer that went away does not
   * keep its memory alive through this process.
   */
  forgetProcess(pid: number): void {
    for (const [key, entry] of this.mapped) if (key.startsWith(`${pid}:`)) this.forget(key, entry.buffer);
  }

  private map(ref: SegmentRef, peer: PeerProcess): ArrayBuffer {
    const key = `${ref.pid}:${ref.fd}`;
    const cached = this.mapped.get(key);
    if (cached && cached.id === ref.id && cached.buffer.byteLength === ref.size) {
      this.mapped.delete(key);
      this.mapped.set(key, cached);
      return cached.buffer;
    }
    if (cached) this.forget(key, cached.buffer);
    // The addon refuses anything but a memory file of the peer's user, of exactly that size.
    const buffer = this.binding.open(ref.pid, ref.fd, ref.size, peer.uid);
    // Opened through the pid: it must still be the process that was shown to be the peer.
    if (startTimeOf(ref.pid) !== peer.startTime) throw new RangeError(`process ${ref.pid} is no longer the peer`);
    this.mapped.set(key, { id: ref.id, buffer });
    this.mappedBytes += ref.size;
    // Dropping a mapping from the cache unmaps it once no view of it is left.
    for (const [oldest, entry] of this.mapped) {
      if (this.mappedBytes <= this.budgetBytes || oldest === key) break;
      this.forget(oldest, entry.buffer);
    }
    return buffer;
  }

  private forget(key: string, buffer: ArrayBuffer): void {
    this.mapped.delete(key);
    this.mappedBytes -= buffer.byteLength;
  }
}
