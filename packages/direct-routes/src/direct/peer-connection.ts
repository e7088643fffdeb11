/**
 * One TCP connection to another process's data port: requests go out with an
 * id, and each reply frame goes into a buffer of its own size (Node's
 * `onread` with a buffer per read), or into the memory a request's reply sink
 * gives (tensor memory), settling the request of its id. What arrives at the
 * start of a frame is read ahead into one buffer and copied where it belongs;
 * the rest of a longer body is read in place. Large
 * replies from another host come striped over lanes, once opened (see
 * reply-lanes.ts). Where the reply being read stands is kept in a
 * ReplyReadState; the pool of connections is in connection-pool.ts.
 * @module
 */
import { connect, type Socket } from 'node:net';
import type { Frame, FrameSink } from '@tensorbus/core';
import { acquireFrame } from '@tensorbus/core/internal';
import { SEGMENT_REF_BYTES, type SegmentRef } from '../shm/shared-segments.js';
import type { PeerProcess, SocketEnds } from '../shm/socket-peer.js';
import {
  COALESCE_BYTES,
  isLoopback,
  laneFrame,
  newToken,
  OP_PART,
  OP_RELEASE,
  OP_REPLY,
  readSize,
  REPLY_OK,
  STRIPE_MAX_BYTES,
  STRIPE_MIN_BYTES,
} from './direct-protocol.js';
import { ReplyLanes, type LaneOwner } from './reply-lanes.js';
import { busyPoll } from './busy-poll.js';
import { READ_INTO_HEAP } from './heap-writes.js';
import {
  ConnectionLostError,
  emptyFrame,
  replyRefusal,
  ReplySizeError,
  type PeerReply,
  type ReplyLimit,
  type ReplySinkFactory,
} from './peer-replies.js';
import { ReplyReadState } from './reply-read-state.js';
import { unixSocketOpened } from './unix-socket.js';
import { SegmentLoans } from './segment-loans.js';
import type { PeerConnectionOptions } from './connection-options.js';

/** How long a connection may take to open, ms. */
const CONNECT_TIMEOUT_MS = 2_000;

interface Pending {
  resolve(reply: PeerReply): void;
  reject(error: Error): void;
  replySink?: ReplySinkFactory;
  limit?: ReplyLimit;
}

/**
 * Where a connection reads when the next bytes begin a frame: as much as has
 * arrived, up to this, in one read (a small reply and its header come in one
 * system call, and the read that follows a full one finds nothing), then
 * copied where each frame's bytes belong; a long body's rest is read in place.
 */
const READ_AHEAD_BYTES = 64 * 1024;
/** Experiment knob (`npm run bench -- --experiment read-ahead`): `=0` reads each header into its own buffer, each body in place. */
const READ_AHEAD = process.env.TENSORBUS_EXPERIMENT_READ_AHEAD !== '0';
/** Bytes read at a time while passing over a refused reply. */
const DISCARD_BYTES = 64 * 1024;
/**
 * Where a connection that may not read into a sink's memory (`readIntoSink`
 * false) reads the sink's bytes (and a part's), to copy them in inside the
 * read's callback.
 */
const STAGING_BYTES = 256 * 1024;

/** A pooled connection; requests are answered in any order. */
export class PeerConnection implements LaneOwner {
  broken = false;
  private readonly pending = new Map<number, Pending>();
  /** Shared-memory segments lent to the peer and borrowed from it. */
  private readonly loans = new SegmentLoans();
  /** Where the reply (or part) being read stands, and where its next bytes go. */
  private readonly read = new ReplyReadState();
  private staging: Buffer | undefined;
  /** Where a read that begins a frame goes (see {@link READ_AHEAD_BYTES}). */
  private readAhead: Buffer | undefined;
  /** The last buffer handed to the socket: `staging` or `readAhead`, copied from in the read's callback; undefined when read in place. */
  private staged: Buffer | undefined;
  /** The lanes this connection opened (its replies may come in parts on them), or the group it is a lane of. */
  private group: ReplyLanes | undefined;
  private readonly lane: boolean;
  /** Connections to keep to this endpoint once a large reply comes, this one included. */
  private readonly laneCount: number;
  private readonly options: PeerConnectionOptions;
  /** Where a refused reply's bytes are read, to be passed over. */
  private discardBuffer: Uint8Array | undefined;
  private nextId = 0;
  private connected = false;
  private stallTimer: NodeJS.Timeout | undefined;
  /** When the last progress was made (see {@link armStall}). */
  private progressAt = 0;
  private readonly socket: Socket;
  /** True when this connection goes through the data port's Unix socket, not TCP. */
  readonly viaUnixSocket: boolean;
  /** Through a Unix socket, the process the kernel says made the port's end (null: it could not be read); undefined on TCP. */
  unixPeer: PeerProcess | null | undefined;

  private readonly endpoint: string;
  private readonly stallTimeoutMs: number | undefined;
  private readonly onBroken: (idle: boolean) => void;
  private readonly maxReplyBytes: number;
  private readonly readIntoSink: boolean;

  constructor(options: PeerConnectionOptions) {
    const { host, port, path, idleCloseMs = 0 } = options;
    this.endpoint = options.endpoint;
    this.stallTimeoutMs = options.stallTimeoutMs;
    this.onBroken = options.onBroken;
    this.maxReplyBytes = options.maxReplyBytes ?? 2 ** 31 - 1;
    this.readIntoSink = options.readIntoSink ?? READ_INTO_HEAP;
    this.options = options;
    this.lane = options.laneOf !== undefined;
    this.group = options.laneOf?.group;
    this.laneCount = this.lane || path !== undefined || isLoopback(host) ? 1 : Math.max(1, options.lanes ?? 1);
    this.viaUnixSocket = path !== undefined;
    const onread = { buffer: () => this.nextBuffer(), callback: (n: number) => this.onRead(n) };
    this.socket = path !== undefined ? connect({ path, onread }) : connect({ host, port, noDelay: true, onread });
    if (options.laneOf) this.socket.write(laneFrame(options.laneOf.token, options.laneOf.index));
    this.socket.unref();
    const timer = setTimeout(() => this.fail(`did not open within ${CONNECT_TIMEOUT_MS} ms`), CONNECT_TIMEOUT_MS);
    timer.unref();
    this.socket.once('connect', () => {
      clearTimeout(timer);
      this.connected = true;
      if (this.viaUnixSocket) this.unixPeer = unixSocketOpened(this.socket);
    });
    this.socket.on('error', (error) => this.fail(`failed: ${error.message}`));
    this.socket.on('close', () => this.fail('closed'));
    if (idleCloseMs > 0) {
      // Closed here before the port closes it (see CLIENT_IDLE_MARGIN), so no request races that close.
      this.socket.setTimeout(idleCloseMs, () => {
        if (this.pending.size === 0 && this.loans.none) this.fail('was idle', true);
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
      if (!payload || payload.byteLength < COALESCE_BYTES) {
        this.socket.write(payload ? Buffer.concat([frame, payload.bytes]) : frame);
        return;
      }
      // The socket reads the payload's memory until written: it keeps a share till then.
      const share = payload.retain();
      this.socket.cork();
      this.socket.write(frame);
      this.socket.write(share.bytes, () => share.release());
      this.socket.uncork();
    });
  }

  /** Sends a frame that gets no reply (a reply's segment given back). */
  send(frame: Buffer): void {
    if (!this.broken) this.socket.write(frame);
  }

  /** Records `frame` (in the segment `ref`) as lent to the peer, taking the caller's share: released once given back. */
  lend(ref: SegmentRef, frame: Frame): void {
    this.loans.lend(ref, frame);
  }

  /** Counts a reply that lies in the peer's memory until the returned function (idempotent) says it was given back. */
  borrow(): () => void {
    return this.loans.borrow();
  }

  /** Takes a lent frame back (the peer refused it): its share comes back to the caller. */
  unlend(ref: SegmentRef): Frame | undefined {
    return this.loans.unlend(ref);
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
    this.staged = undefined;
    const read = this.read;
    if (READ_AHEAD && read.betweenFrames) return (this.staged = this.readAhead ??= Buffer.allocUnsafe(READ_AHEAD_BYTES));
    // A sink's memory may move when other code runs (a WASM heap that grows where it cannot stay put): staged then.
    // (A part goes where its reply puts it: a sink's memory only where reads may go into it.)
    if (read.readingSink && !this.readIntoSink) return this.stagingBuffer();
    return read.target() ?? (this.discardBuffer ??= new Uint8Array(DISCARD_BYTES)).subarray(0, Math.min(DISCARD_BYTES, read.discard));
  }

  /** The staging buffer, as the memory of the next read: what lands there is copied where it belongs. */
  private stagingBuffer(): Uint8Array {
    return (this.staged = this.staging ??= Buffer.allocUnsafe(STAGING_BYTES));
  }

  private onRead(n: number): boolean {
    if (this.broken) return false;
    busyPoll.received();
    try {
      return this.staged ? this.consumeStaged(this.staged, n) : this.consume(n);
    } catch (error) {
      // Runs in a socket callback: whatever went wrong fails this connection, never the process.
      this.fail(`could not take a reply: ${(error as Error).message}`);
      return false;
    }
  }

  /**
   * `n` bytes read into `staging` (the staging or read-ahead buffer), copied
   * where a read in place would have put them, frame after frame.
   */
  private consumeStaged(staging: Buffer, n: number): boolean {
    let at = 0;
    while (at < n && !this.broken) {
      const into = this.read.target();
      // Passed-over bytes stay where they are; the rest are copied to where they belong.
      const k = Math.min(into ? into.byteLength : this.read.discard, n - at);
      into?.set(staging.subarray(at, at + k));
      at += k;
      if (!this.consume(k)) return false;
    }
    return !this.broken;
  }

  /** `n` bytes landed where `read.target()` said (or were passed over): moves the reply read along. */
  private consume(n: number): boolean {
    this.armStall();
    const read = this.read;
    if (read.readingHeader) {
      read.headerGot += n;
      if (read.readingHeader) return true;
      const header = read.header;
      if (header[0] === OP_PART) return this.beginPart(header.readUInt32BE(1), readSize(header, 5), readSize(header, 13), header.readUInt32BE(21));
      if ((header[0] !== OP_REPLY && header[0] !== OP_RELEASE) || this.lane) {
        this.fail(this.lane ? 'sent a whole reply on a lane' : 'sent something other than a reply or a give-back');
        return false;
      }
      return this.begin(header.readUInt32BE(1), header[5]!, readSize(header, 6));
    } else if (read.discard > 0) {
      read.discard -= n;
      if (read.discard === 0) read.headerGot = 0;
      return true;
    } else if (read.part) {
      const part = read.part;
      if (n === part.left) {
        read.part = undefined;
        read.headerGot = 0;
      }
      // The last bytes of a reply's last part settle its request.
      part.advance(n);
      return !this.broken;
    } else if (read.sink && read.got < read.sinkBytes) {
      read.got += n;
      read.sink.advance(n);
    } else if (read.frame && read.got < read.frame.byteLength) {
      read.got += n;
    } else {
      this.fail('sent more bytes than announced');
      return false;
    }
    if (read.bodyDone) this.settle();
    return true;
  }

  /** A reply header arrived: checks its size against what its request accepts before anything is allocated. */
  private begin(id: number, status: number, size: number): boolean {
    const read = this.read;
    read.got = 0;
    const waiting = this.pending.get(id);
    const problem = read.header[0] === OP_RELEASE
      ? (id === 0 && size === SEGMENT_REF_BYTES ? undefined : 'sent a malformed give-back')
      : !waiting
        ? 'answered a request it was not sent'
        : replyRefusal(status, size, waiting.limit, this.maxReplyBytes);
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
      read.discard = size;
      if (size === 0) read.headerGot = 0;
      return true;
    }
    // A large reply from another host: later ones can come faster over lanes.
    if (status === REPLY_OK && size >= STRIPE_MIN_BYTES && size <= STRIPE_MAX_BYTES && this.laneCount > 1 && !this.group) this.openLanes();
    read.sink = status === REPLY_OK && size > 0 ? waiting?.replySink?.(size) : undefined;
    if (read.sink) read.sinkBytes = size;
    else read.frame = acquireFrame(size);
    if (size === 0) this.settle();
    return true;
  }

  /** A part's header arrived: where its bytes go (the group checks it), or the connection fails. */
  private beginPart(id: number, total: number, offset: number, length: number): boolean {
    this.read.got = 0;
    const placed = this.group ? this.group.place(id, total, offset, length) : { error: 'sent a part of a striped reply where no lanes were opened' };
    if (this.broken) return false;
    if ('error' in placed) {
      this.fail(placed.error);
      return false;
    }
    // A refused reply's part is passed over as it comes.
    if ('discard' in placed) this.read.discard = length;
    else this.read.part = placed.part;
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
    return replyRefusal(REPLY_OK, size, waiting.limit, this.maxReplyBytes);
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

  private settle(): void {
    const id = this.read.header.readUInt32BE(1);
    const status = this.read.header[5]!;
    const reply: PeerReply = { status, data: this.read.takeBody() ?? emptyFrame() };
    if (this.read.header[0] === OP_RELEASE) return this.loans.takeBack(reply.data);
    const waiting = this.pending.get(id);
    this.pending.delete(id);
    this.armStall();
    if (waiting) waiting.resolve(reply);
    else reply.data.release();
  }

  /**
   * Progress (or a request sent): the connection fails once requests have
   * been pending for the stall timeout without any. One timer checks the
   * time of the last progress when it fires (and waits again for the rest),
   * so progress costs no timer of its own.
   */
  private armStall(): void {
    if (this.stallTimeoutMs === undefined) return;
    this.progressAt = performance.now();
    if (this.stallTimer === undefined && this.pending.size > 0) this.waitForStall(this.stallTimeoutMs);
  }

  private waitForStall(ms: number): void {
    this.stallTimer = setTimeout(() => {
      this.stallTimer = undefined;
      if (this.broken || this.pending.size === 0) return;
      const idleMs = performance.now() - this.progressAt;
      if (idleMs >= this.stallTimeoutMs!) this.fail(`made no progress for ${this.stallTimeoutMs} ms`);
      else this.waitForStall(this.stallTimeoutMs! - idleMs);
    }, ms).unref();
  }

  fail(why: string, idle = false): void {
    if (this.broken) return;
    this.broken = true;
    clearTimeout(this.stallTimer);
    this.socket.destroy();
    this.read.part = undefined;
    // Its lanes go with it (a lane's group goes on without the lane, unless a reply was coming).
    if (!this.lane) this.group?.close();
    this.read.abandon();
    this.loans.dropAll(this.connected);
    const error = new ConnectionLostError(`direct connection to ${this.endpoint} ${why}`, this.connected);
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
    this.onBroken(idle);
  }
}

