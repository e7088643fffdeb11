/**
 * Where a direct connection is in the stream of frames it reads: a header
 * being read, a refused reply's bytes being passed over, a part of a striped
 * reply, or a reply's body (into a sink's memory or a frame of its own). One
 * place, {@link ReplyReadState.target}, says where the next bytes go.
 * @module
 */
import type { Frame, FrameSink } from '@tensorbus/core';
import { OP_PART, PART_HEADER_BYTES, REPLY_HEADER_BYTES } from './direct-protocol.js';
import type { IncomingPart } from './striped-reply.js';

/** The read state of one connection's replies (see peer-connection.ts, which moves it along). */
export class ReplyReadState {
  /** The header being read: a reply's, or (once its first byte says so) a part's. */
  readonly header = Buffer.alloc(PART_HEADER_BYTES);
  /** Bytes of `header` read so far; 0 between frames. */
  headerGot = 0;
  /** The frame the reply being read goes into, when no sink took it. */
  frame: Frame | undefined;
  /** Where the reply being read goes instead of `frame`, and its size. */
  sink: FrameSink | undefined;
  sinkBytes = 0;
  /** Bytes of the reply's body read so far. */
  got = 0;
  /** The part of a striped reply being read: where its bytes go. */
  part: IncomingPart | undefined;
  /** Bytes of a refused reply (or part) still to pass over, kept nowhere. */
  discard = 0;
  /** Where bytes beyond an announced body land (the connection then fails). */
  private readonly spare = Buffer.alloc(64);

  /** Bytes of the header being read. */
  headerBytes(): number {
    return this.headerGot > 0 && this.header[0] === OP_PART ? PART_HEADER_BYTES : REPLY_HEADER_BYTES;
  }

  /** No frame is being read: the next bytes begin one (a header's 0 bytes are set at each frame's end, passed-over ones included). */
  get betweenFrames(): boolean {
    return this.headerGot === 0;
  }

  /** The header being read is still short of bytes. */
  get readingHeader(): boolean {
    return this.headerGot < this.headerBytes();
  }

  /** The next bytes belong to a refused reply and are passed over. */
  get passingOver(): boolean {
    return !this.readingHeader && this.discard > 0;
  }

  /** The next bytes go into a reply sink's memory. */
  get readingSink(): boolean {
    return !this.readingHeader && this.discard === 0 && !this.part && this.sink !== undefined && this.got < this.sinkBytes;
  }

  /**
   * Where the next bytes go: the header, a part's or sink's memory, the
   * reply's own frame, or (past an announced body) a spare buffer; undefined
   * while passing over a refused reply's bytes.
   */
  target(): Uint8Array | undefined {
    if (this.readingHeader) return this.header.subarray(this.headerGot, this.headerBytes());
    if (this.discard > 0) return undefined;
    if (this.part) return this.part.target();
    if (this.sink && this.got < this.sinkBytes) return this.sink.target();
    if (this.frame && this.got < this.frame.byteLength) return this.frame.bytes.subarray(this.got);
    return this.spare;
  }

  /** The reply's body has come whole. */
  get bodyDone(): boolean {
    return this.got === (this.sink ? this.sinkBytes : this.frame!.byteLength);
  }

  /** Ends the reply read whole: returns its frame (undefined when a sink took it) and waits for the next frame. */
  takeBody(): Frame | undefined {
    const frame = this.sink ? undefined : this.frame;
    this.headerGot = 0;
    this.frame = undefined;
    this.sink = undefined;
    this.got = 0;
    return frame;
  }

  /** The connection broke: the reply being read is dropped (its frame released, its sink failed). */
  abandon(): void {
    this.part = undefined;
    this.frame?.release();
    this.frame = undefined;
    // The socket is destroyed: nothing writes into the sink's memory any more.
    this.sink?.fail();
    this.sink = undefined;
  }
}
