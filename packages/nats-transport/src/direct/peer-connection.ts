/**
 * One TCP connection to another process's data port: requests go out with an
 * id, and each reply frame is read straight into a buffer of its own size
 * (Node's `onread` with a buffer per read), or into the memory a request's
 * reply sink gives (tensor memory), settling the request of its id. Large
 * replies from another host come striped over lanes, once opened (see
 * reply-lanes.ts).
 * @module
 */
import { connect, type Socket } from 'node:net';
import { Frame, TransportError, type FrameSink } from '@tensorbus/core';
import { acquireFrame } from '@tensorbus/core/internal';
import { readSegmentRef, SEGMENT_REF_BYTES, type SegmentRef } from '../shm/shared-segments.js';
import type { SocketEnds } from '../shm/socket-peer.js';
import {
  COALESCE_BYTES,
  isLoopback,
  laneFrame,
  newToken,
  OP_PART,
  OP_REPLY,
  PART_HEADER_BYTES,
  readSize,
  REPLY_FILLING,
  REPLY_HEADER_BYTES,
  REPLY_OK,
  REPLY_RELEASE,
  REPLY_SHM,
  STRIPE_MAX_BYTES,
  STRIPE_MIN_BYTES,
} from './direct-protocol.js';
import { ReplyLanes, type LaneOwner } from './reply-lanes.js';
import type { IncomingPart } from './striped-reply.js';
import { busyPoll } from './busy-poll.js';
import { DueFrames } from './due-frames.js';
import { READ_INTO_HEAP } from './heap-writes.js';

/** How long a connection may take to open, ms. */
const CONNECT_TIMEOUT_MS = 2_000;

/** A reply: its status and bytes (a frame the request's caller owns: release it when done; empty when a sink took them). */
export interface PeerReply {
  status: number;
  data: Frame;
}

/**
 * How large a request's reply may be: exactly `exact` bytes (a fetch knows
 * the size it was announced), or at most `max`. A reply of another size fails
 * its request before anything is allocated for it.
 */
export interface ReplyLimit {
  exact?: number;
  max?: number;
}

/** A reply declared a size its request does not accept. */
export class ReplySizeError extends TransportError {
  override readonly name = 'ReplySizeError';
}

/** Offered a reply's size; returns where its bytes go, or undefined for a buffer of their own. */
export type ReplySinkFactory = (byteLength: number) => FrameSink | undefined;

const EMPTY = new Uint8Array(0);

/** A frame with nothing in it (a refusal, or a reply a sink took). */
function emptyFrame(): Frame {
  return Frame.of(EMPTY);
}

/** The connection broke; `delivered` tells whether it had opened (requests may then have run). */
export class ConnectionLostError extends TransportError {
  override readonly name = 'ConnectionLostError';
  constructor(message: string, readonly delivered: boolean) {
    super(message);
  }
}

interface Pending {
  resolve(reply: PeerReply): void;
  reject(error: Error): void;
  replySink?: ReplySinkFactory;
  limit?: ReplyLimit;
}

/** Bytes read at a time while passing over a refused reply. */
const DISCARD_BYTES = 64 * 1024;
/**
 * A read between replies goes into a buffer this large, so a reply's header
 * and a small body (and any replies behind it) come in one read; the bytes
 * are then copied where they go. A larger body's rest is read straight into
 * its own memory.
 */
const STAGING_BYTES = 16 * 1024;
/** The staging buffer of a connection that copies every reply into its sink (`readIntoSink` false). */
const COPYING_STAGING_BYTES = 256 * 1024;

/** How a {@link PeerConnection} behaves (the pool's options, per connection). */
export interface ConnectionLimits {
  /**
   * Fail the connection when requests are pending and no byte arrives for
   * this long, ms (for fetches, answered at once); undefined for requests
   * that may legitimately take any time (calls).
   */
  stallTimeoutMs?: number;
  /** Replies larger than this fail their request, unallocated (default 2 GiB - 1). */
  maxReplyBytes?: number;
  /** Close the connection once nothing has been under way for this long, ms (0 or undefined: never). */
  idleCloseMs?: number;
  /**
   * Connections to keep to a data port on another host once a large reply
   * came from it, this one included (see reply-lanes.ts; default 1: none
   * beside it). Loopback endpoints get none (processes of one host share
   * memory instead).
   */
  lanes?: number;
}

/** Options of {@link PeerConnection}. */
export interface PeerConnectionOptions extends ConnectionLimits {
  /** `host:port`, for messages. */
  endpoint: string;
  host: string;
  port: number;
  /** Told once when the connection breaks or closes; `idle` when it was closed for being idle. */
  onBroken: (idle: boolean) => void;
  /**
   * Let the socket read straight into a reply sink's memory (default: where
   * the WASM heap stays put, `READ_INTO_HEAP`); when false, sink bytes are
   * read into the connection's own buffer and copied, since the memory of a
   * read is asked for before other code runs and used after.
   */
  readIntoSink?: boolean;
  /** This connection is a lane of `group`, with this index: it sends no requests and takes parts of the group's replies. */
  laneOf?: { group: ReplyLanes; token: Buffer; index: number };
  /** Told of each striped reply that came whole. */
  onStriped?: () => void;
}

/** A pooled connection; requests are answered in any order. */
export class PeerConnection implements LaneOwner {
  broken = false;
  private readonly pending = new Map<number, Pending>();
  /** Frames lent to the peer in shared memory (a share each), by segment id, until it gives them back. */
  private readonly lent = new Map<string, Frame>();
  private readonly header = Buffer.alloc(PART_HEADER_BYTES);
  private readonly spare = Buffer.alloc(64);
  private staging: Buffer | undefined;
  /** The last buffer handed to the socket was `staging`. */
  private staged = false;
  private headerGot = 0;
  private target: Frame | undefined;
  /** Where the reply being read goes instead of `target`, and its size. */
  private sink: FrameSink | undefined;
  private sinkBytes = 0;
  private got = 0;
  /** The part of a striped reply being read: where its bytes go. */
  private part: IncomingPart | undefined;
  /** The lanes this connection opened (its replies may come in parts on them), or the group it is a lane of. */
  private group: ReplyLanes | undefined;
  private readonly lane: boolean;
  /** Connections to keep to this endpoint once a large reply comes, this one included. */
  private readonly laneCount: number;
  private readonly options: PeerConnectionOptions;
  /** Bytes of a refused reply still to pass over (read into `discardBuffer`, kept nowhere). */
  private discard = 0;
  private discardBuffer: Uint8Array | undefined;
  /** Replies received in the peer's shared memory and not yet given back. */
  private borrowed = 0;
  /** Frames that get no reply, not written yet: they go in front of the next request, or at the end of this turn of the event loop. */
  private readonly due = new DueFrames((bytes) => {
    if (!this.broken) this.socket.write(bytes);
  });
  private nextId = 0;
  private connected = false;
  private stallTimer: NodeJS.Timeout | undefined;
  private readonly socket: Socket;

  private readonly endpoint: string;
  private readonly stallTimeoutMs: number | undefined;
  private readonly onBroken: (idle: boolean) => void;
  private readonly maxReplyBytes: number;
  private readonly readIntoSink: boolean;

  constructor(options: PeerConnectionOptions) {
    const { host, port, idleCloseMs = 0 } = options;
    this.endpoint = options.endpoint;
    this.stallTimeoutMs = options.stallTimeoutMs;
    this.onBroken = options.onBroken;
    this.maxReplyBytes = options.maxReplyBytes ?? 2 ** 31 - 1;
    this.readIntoSink = options.readIntoSink ?? READ_INTO_HEAP;
    this.options = options;
    this.lane = options.laneOf !== undefined;
    this.group = options.laneOf?.group;
    this.laneCount = this.lane || isLoopback(host) ? 1 : Math.max(1, options.lanes ?? 1);
    this.socket = connect({ host, port, noDelay: true, onread: { buffer: () => this.nextBuffer(), callback: (n: number) => this.onRead(n) } });
    if (options.laneOf) this.socket.write(laneFrame(options.laneOf.token, options.laneOf.index));
    this.socket.unref();
    const timer = setTimeout(() => this.fail(`did not open within ${CONNECT_TIMEOUT_MS} ms`), CONNECT_TIMEOUT_MS);
    timer.unref();
    this.socket.once('connect', () => {
      clearTimeout(timer);
      this.connected = true;
    });
    this.socket.on('error', (error) => this.fail(`failed: ${error.message}`));
    this.socket.on('close', () => this.fail('closed'));
    if (idleCloseMs > 0) {
      // Closed here before the port closes it (see CLIENT_IDLE_MARGIN), so no request races that close.
      this.socket.setTimeout(idleCloseMs, () => {
        if (this.pending.size === 0 && this.lent.size === 0 && this.borrowed === 0) this.fail('was idle', true);
        else this.socket.setTimeout(idleCloseMs);
      });
    }
  }

  /**
   * Sends the frame `head(id)`, then `payload` if any (from its own memory,
   * not copied: a share of it is held until the socket has written it), and
   * resolves with the reply. Rejects with ConnectionLostError if the
   * connection breaks first. A successful reply goes into the sink
   * `replySink` gives, if it gives one.
   */
  request(head: (id: number) => Buffer, payload?: Frame, replySink?: ReplySinkFactory, limit?: ReplyLimit): Promise<PeerReply> {
    // Id 0 is the peer's: it gives segments back with it.
    const id = (this.nextId = (this.nextId + 1) >>> 0 || 1);
    const frame = head(id);
    return new Promise<PeerReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject, replySink, limit });
      this.armStall();
      busyPoll.sent();
      const due = this.due.take();
      if (!payload || payload.byteLength < COALESCE_BYTES) {
        const parts: Uint8Array[] = [frame];
        if (due) parts.unshift(due);
        if (payload) parts.push(payload.bytes);
        this.socket.write(parts.length === 1 ? frame : Buffer.concat(parts));
        return;
      }
      // The socket reads the payload's memory until written: it keeps a share till then.
      const share = payload.retain();
      this.socket.cork();
      this.socket.write(due ? Buffer.concat([due, frame]) : frame);
      this.socket.write(share.bytes, () => share.release());
      this.socket.uncork();
    });
  }

  /**
   * Sends a frame that gets no reply, in front of the next request on this
   * connection (a reply's segment is given back just before the next call:
   * one write, one wakeup of the peer), or at the end of this turn of the
   * event loop.
   */
  sendSoon(frame: Buffer): void {
    if (!this.broken) this.due.add(frame);
  }

  /** Records `frame` (in the segment `ref`) as lent to the peer, taking the caller's share: released once given back. */
  lend(ref: SegmentRef, frame: Frame): void {
    this.lent.get(ref.id)?.release();
    this.lent.set(ref.id, frame);
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

  /** Takes a lent frame back (the peer refused it): its share comes back to the caller. */
  unlend(ref: SegmentRef): Frame | undefined {
    const frame = this.lent.get(ref.id);
    this.lent.delete(ref.id);
    return frame;
  }

  close(): void {
    this.socket.destroy();
  }

  /** The socket's two ends (shared memory checks which process holds the other one). */
  get ends(): SocketEnds {
    return this.socket;
  }

  /**
   * The memory of the socket's next read. Node asks for it right after the
   * previous read's callback and reads into it later, once the socket is
   * readable: other code runs in between.
   */
  private nextBuffer(): Uint8Array {
    this.staged = false;
    if (this.headerGot === 0 && this.discard === 0) return this.stagingBuffer();
    if (this.headerGot < this.headerBytes()) return this.header.subarray(this.headerGot, this.headerBytes());
    if (this.discard > 0) return (this.discardBuffer ??= new Uint8Array(DISCARD_BYTES)).subarray(0, Math.min(DISCARD_BYTES, this.discard));
    // A part goes where its reply puts it (a sink's memory only where reads may go into it).
    if (this.part) return this.part.target();
    // A sink's memory may move when other code runs (a WASM heap that grows where it cannot stay put): staged then.
    if (this.sink && this.got < this.sinkBytes) return this.readIntoSink ? this.sink.target() : this.stagingBuffer();
    if (this.target && this.got < this.target.byteLength) return this.target.bytes.subarray(this.got);
    return this.spare;
  }

  /** Bytes of the frame header being read: a reply's, or (once its first byte says so) a part's. */
  private headerBytes(): number {
    return this.headerGot > 0 && this.header[0] === OP_PART ? PART_HEADER_BYTES : REPLY_HEADER_BYTES;
  }

  /** The staging buffer, as the memory of the next read: what lands there is copied where it belongs. */
  private stagingBuffer(): Uint8Array {
    this.staged = true;
    return (this.staging ??= Buffer.allocUnsafe(this.readIntoSink ? STAGING_BYTES : COPYING_STAGING_BYTES));
  }

  private onRead(n: number): boolean {
    if (this.broken) return false;
    busyPoll.received();
    try {
      return this.staged ? this.consumeStaged(n) : this.consume(n);
    } catch (error) {
      // Runs in a socket callback: whatever went wrong fails this connection, never the process.
      this.fail(`could not take a reply: ${(error as Error).message}`);
      return false;
    }
  }

  /**
   * `n` bytes read into `staging` between replies: headers, bodies or parts
   * of them, each copied where a direct read would have put it, in order.
   */
  private consumeStaged(n: number): boolean {
    const staging = this.staging!;
    let at = 0;
    while (at < n && !this.broken) {
      let into: Uint8Array;
      if (this.headerGot < this.headerBytes()) into = this.header.subarray(this.headerGot, this.headerBytes());
      else if (this.discard > 0) into = staging.subarray(at, at + Math.min(this.discard, n - at));
      else if (this.part) into = this.part.target();
      else if (this.sink && this.got < this.sinkBytes) into = this.sink.target();
      else if (this.target && this.got < this.target.byteLength) into = this.target.bytes.subarray(this.got);
      else into = this.spare;
      const k = Math.min(into.byteLength, n - at);
      // Passed-over bytes stay where they are; the rest are copied to where they belong.
      if (this.headerGot >= this.headerBytes() && this.discard > 0) at += k;
      else {
        into.set(staging.subarray(at, at + k));
        at += k;
      }
      if (!this.consume(k)) return false;
    }
    return !this.broken;
  }

  private consume(n: number): boolean {
    this.armStall();
    if (this.headerGot < this.headerBytes()) {
      this.headerGot += n;
      if (this.headerGot < this.headerBytes()) return true;
      if (this.header[0] === OP_PART) return this.beginPart(this.header.readUInt32BE(1), readSize(this.header, 5), readSize(this.header, 13), this.header.readUInt32BE(21));
      if (this.header[0] !== OP_REPLY || this.lane) {
        this.fail(this.lane ? 'sent a whole reply on a lane' : 'sent something other than a reply');
        return false;
      }
      return this.begin(this.header.readUInt32BE(1), this.header[5]!, readSize(this.header, 6));
    } else if (this.discard > 0) {
      this.discard -= n;
      if (this.discard === 0) this.headerGot = 0;
      return true;
    } else if (this.part) {
      const part = this.part;
      if (n === part.left) {
        this.part = undefined;
        this.headerGot = 0;
      }
      // The last bytes of a reply's last part settle its request.
      part.advance(n);
      return !this.broken;
    } else if (this.sink && this.got < this.sinkBytes) {
      this.got += n;
      this.sink.advance(n);
    } else if (this.target && this.got < this.target.byteLength) {
      this.got += n;
    } else {
      this.fail('sent more bytes than announced');
      return false;
    }
    if (this.got === (this.sink ? this.sinkBytes : this.target!.byteLength)) this.settle();
    return true;
  }

  /** A reply header arrived: checks its size against what its request accepts before anything is allocated. */
  private begin(id: number, status: number, size: number): boolean {
    this.got = 0;
    const waiting = this.pending.get(id);
    const problem = id === 0
      ? (status === REPLY_RELEASE && size === SEGMENT_REF_BYTES ? undefined : 'sent a malformed give-back')
      : !waiting
        ? 'answered a request it was not sent'
        : this.refusal(status, size, waiting.limit);
    if (problem === 'fail') {
      // A fetch knows its size: an endpoint that sends another one is broken or hostile.
      this.fail(`sent a reply of ${size} bytes where ${waiting!.limit!.exact} were announced`);
      return false;
    }
    if (problem) {
      if (!waiting) {
        this.fail(problem);
        return false;
      }
      // Only this request fails; the connection stays in step by passing over the bytes.
      this.refuse(id, problem);
      this.discard = size;
      if (size === 0) this.headerGot = 0;
      return true;
    }
    // A large reply from another host: later ones can come faster over lanes.
    if (status === REPLY_OK && size >= STRIPE_MIN_BYTES && size <= STRIPE_MAX_BYTES && this.laneCount > 1 && !this.group) this.openLanes();
    this.sink = status === REPLY_OK && size > 0 ? waiting?.replySink?.(size) : undefined;
    if (this.sink) this.sinkBytes = size;
    else this.target = acquireFrame(size);
    if (size === 0) this.settle();
    return true;
  }

  /** A part's header arrived: where its bytes go (the group checks it), or the connection fails. */
  private beginPart(id: number, total: number, offset: number, length: number): boolean {
    this.got = 0;
    const placed = this.group ? this.group.place(id, total, offset, length) : { error: 'sent a part of a striped reply where no lanes were opened' };
    if (this.broken) return false;
    if ('error' in placed) {
      this.fail(placed.error);
      return false;
    }
    // A refused reply's part is passed over as it comes.
    if ('discard' in placed) this.discard = length;
    else this.part = placed.part;
    return true;
  }

  /** Opens the lanes beside this connection: each joins the group this one starts. */
  private openLanes(): void {
    const token = newToken();
    const group = (this.group = new ReplyLanes(this));
    this.socket.write(laneFrame(token, 0));
    for (let index = 1; index < this.laneCount; index++) {
      const { host, port, endpoint } = this.options;
      const lane: PeerConnection = new PeerConnection({
        endpoint: `${endpoint} (lane ${index})`,
        host,
        port,
        readIntoSink: this.readIntoSink,
        laneOf: { group, token, index },
        onBroken: () => group.laneLost(lane),
      });
      group.add(lane);
    }
  }

  // LaneOwner: what the group's parts do to this connection's requests.

  accepts(id: number, size: number): string | undefined {
    const waiting = id === 0 ? undefined : this.pending.get(id);
    if (!waiting) return 'fail';
    return this.refusal(REPLY_OK, size, waiting.limit);
  }

  refuse(id: number, why: string): void {
    const waiting = this.pending.get(id);
    this.pending.delete(id);
    this.armStall();
    waiting?.reject(new ReplySizeError(`direct reply from ${this.endpoint} refused: ${why}`));
  }

  sinkFor(id: number, size: number): FrameSink | undefined {
    return this.pending.get(id)?.replySink?.(size);
  }

  get readsIntoSink(): boolean {
    return this.readIntoSink;
  }

  settleStriped(id: number, frame: Frame | undefined): void {
    const waiting = this.pending.get(id);
    this.pending.delete(id);
    this.armStall();
    if (!waiting) return frame?.release();
    this.options.onStriped?.();
    waiting.resolve({ status: REPLY_OK, data: frame ?? emptyFrame() });
  }

  touch(): void {
    this.armStall();
  }

  /** Why a reply of `size` with `status` is refused ('fail': the connection must go), or undefined. */
  private refusal(status: number, size: number, limit: ReplyLimit | undefined): string | undefined {
    if (status !== REPLY_OK) {
      // Refusals carry nothing; a shared-memory reply carries one reference.
      if (status === REPLY_SHM || status === REPLY_FILLING ? size === SEGMENT_REF_BYTES : size === 0) return undefined;
      return limit?.exact !== undefined ? 'fail' : `status ${status} with ${size} bytes`;
    }
    if (limit?.exact !== undefined) return size === limit.exact ? undefined : 'fail';
    const max = Math.min(limit?.max ?? this.maxReplyBytes, this.maxReplyBytes);
    return size <= max ? undefined : `it declared ${size} bytes; the limit is ${max}`;
  }

  private settle(): void {
    const id = this.header.readUInt32BE(1);
    const reply: PeerReply = { status: this.header[5]!, data: this.sink ? emptyFrame() : (this.target ?? emptyFrame()) };
    this.headerGot = 0;
    this.target = undefined;
    this.sink = undefined;
    this.got = 0;
    if (id === 0 && reply.status === REPLY_RELEASE) return this.takeBack(reply.data);
    const waiting = this.pending.get(id);
    this.pending.delete(id);
    this.armStall();
    if (waiting) waiting.resolve(reply);
    else reply.data.release();
  }

  /** The peer gave back a segment it was lent. */
  private takeBack(body: Frame): void {
    if (body.byteLength === SEGMENT_REF_BYTES) {
      const bytes = body.bytes;
      const { id } = readSegmentRef(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0);
      const frame = this.lent.get(id);
      this.lent.delete(id);
      frame?.release();
    }
    body.release();
  }

  /** (Re)starts the stall timer while requests are pending; stops it otherwise. */
  private armStall(): void {
    clearTimeout(this.stallTimer);
    if (this.stallTimeoutMs === undefined || this.pending.size === 0) return;
    this.stallTimer = setTimeout(() => this.fail(`made no progress for ${this.stallTimeoutMs} ms`), this.stallTimeoutMs);
    this.stallTimer.unref();
  }

  fail(why: string, idle = false): void {
    if (this.broken) return;
    this.broken = true;
    clearTimeout(this.stallTimer);
    this.socket.destroy();
    this.part = undefined;
    // Its lanes go with it (a lane's group goes on without the lane, unless a reply was coming).
    if (!this.lane) this.group?.close();
    this.target?.release();
    this.target = undefined;
    // The socket is destroyed: nothing writes into the sink's memory any more.
    this.sink?.fail();
    this.sink = undefined;
    // Lent over a connection that had opened: the requests failed, nothing will read them again.
    // (Before it opened nothing was sent, and the requester may still send them another way.)
    // (Either way this connection's shares go: a requester that sends them another way holds its own.)
    for (const frame of this.lent.values()) {
      if (this.connected) frame.pin();
      frame.release();
    }
    this.lent.clear();
    const error = new ConnectionLostError(`direct connection to ${this.endpoint} ${why}`, this.connected);
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
    this.onBroken(idle);
  }
}

/** One live connection per data port, opened on first use and replaced once broken. */
export class ConnectionPool {
  /** Replies that came striped over lanes (for tests and the benchmark). */
  stripedReplies = 0;
  private readonly connections = new Map<string, PeerConnection>();

  /**
   * @param limits of every connection (see {@link ConnectionLimits})
   * @param onBroken told of the endpoint of each connection that breaks, and the connection
   *   (not of those closed because they were idle)
   */
  constructor(
    private readonly limits: ConnectionLimits = {},
    private readonly onBroken: (endpoint: string, connection: PeerConnection) => void = () => undefined,
  ) {}

  /** The connection to `host:port` (`endpoint`, when the caller has it made already). */
  get(host: string, port: number, endpoint = `${host}:${port}`): PeerConnection {
    let connection = this.connections.get(endpoint);
    if (!connection || connection.broken) {
      const fresh: PeerConnection = new PeerConnection({
        ...this.limits,
        onStriped: () => this.stripedReplies++,
        endpoint,
        host,
        port,
        onBroken: (idle) => {
          if (this.connections.get(endpoint) === fresh) this.connections.delete(endpoint);
          if (!idle) this.onBroken(endpoint, fresh);
        },
      });
      this.connections.set(endpoint, (connection = fresh));
    }
    return connection;
  }

  /** Closes every connection; their pending requests fail. */
  close(): void {
    for (const connection of this.connections.values()) connection.close();
    this.connections.clear();
  }
}
