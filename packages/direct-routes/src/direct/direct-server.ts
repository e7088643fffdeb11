/**
 * The sending side of the direct data plane: a TCP port that hands out
 * offered payloads to receivers that name their token.
 * @module
 */
import { createServer, type Server, type Socket } from 'node:net';
import { Frame, type FrameSink, type Payload } from '@tensorbus/core';
import { holdPayload, type HeldPayload } from '@tensorbus/core/internal';
import { drainNow, FillingStalledError, placeFilling, receiveFilling, REQUEST_MAX_MS, REQUEST_STALL_MS } from '../shm/filling.js';
import { SEGMENT_REF_BYTES, segmentRefBytes, type SegmentRef, type SharedSegments } from '../shm/shared-segments.js';
import { provePeer, type PeerProcess } from '../shm/socket-peer.js';
import {
  DEFAULT_DIRECT_MIN_BYTES,
  DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_CONNECTIONS,
  formatOffer,
  hostId,
  newToken,
  parseOffer,
  REPLY_FILL_STALLED,
  REPLY_FILLING,
  REPLY_NO_ROUTE,
  REPLY_NO_SHM,
  REPLY_OK,
  REPLY_SHM,
  MAX_LANES,
  giveBackFrame,
  replyHeader,
  type DirectOffer,
  type DirectOptions,
} from './direct-protocol.js';
import { LaneGroups, writeStriped } from './lane-groups.js';
import { RequestParser, type DirectRequest } from './request-parser.js';
import { busyPoll } from './busy-poll.js';
import { ServedConnection, ServedConnections } from './served-connections.js';
import { listenUnixSocket, unixSocketOpened, unixSocketsByDefault } from './unix-socket.js';

/** Fetches an offered payload (the transport's DirectClient), resolving with the caller's frame (empty when `sink` gave one that took the bytes). */
export type Fetcher = (offer: DirectOffer, size: number, sink?: RequestSinkFactory) => Promise<Frame>;

/**
 * Handles a request that came over a direct route: `data` is the handler's
 * share; `respond` answers it (once; a frame answered stays the handler's share).
 */
export type RouteHandler = (data: Frame, respond: (answer: Payload) => boolean, sink?: FrameSink) => void;

/** Where a pulled request's bytes go as they arrive (the subscription's `requestSink`), or undefined for a frame of their own. */
export type RequestSinkFactory = (byteLength: number) => FrameSink | undefined;

const EMPTY = new Uint8Array(0);

/** A subject served over direct routes, until removed. */
export interface ServedRoute {
  /** The tb-route header value offering it. */
  readonly header: string;
  /** Stops accepting direct requests for it. */
  remove(): void;
}

/** A payload on offer, until withdrawn. */
export interface Offered {
  /** The tb-direct header value announcing it. */
  readonly header: string;
  /** Stops handing it out and lets it be collected. */
  withdraw(): void;
}

/** Serves offered payloads on one TCP port. */
export class DirectServer {
  /** Payloads at least this large should go direct. */
  readonly minBytes: number;
  /** Payloads handed out so far (for tests and the benchmark). */
  served = 0;
  /** Requests served over direct routes so far (for tests and the benchmark). */
  calls = 0;
  /** Deferred frames written so far (for tests and the benchmark). */
  streamedSent = 0;
  /** Replies written in parts over a requester's lanes so far (for tests and the benchmark). */
  stripedSent = 0;
  /** The lane groups requesters made of their connections to this port. */
  readonly lanes = new LaneGroups();
  private readonly offers = new Map<string, { data: HeldPayload; onServed: (() => void) | undefined }>();
  private readonly routes = new Map<string, { subject: string; handler: RouteHandler; sinkFor: RequestSinkFactory | undefined }>();
  /** The connections served, one record each. */
  private readonly connections: ServedConnections;
  private readonly maxRequestBytes: number;
  private port = 0;
  private fetcher: Fetcher | undefined;
  /** The Unix socket this port also listens on, for processes of its host (unix-socket.ts). */
  private unix: Server | undefined;
  private segments: SharedSegments | undefined;

  private constructor(private readonly server: Server, private readonly advertise: string, options: DirectOptions) {
    this.minBytes = options.minBytes ?? DEFAULT_DIRECT_MIN_BYTES;
    this.connections = new ServedConnections({
      maxConnections: Math.max(1, options.maxConnections ?? DEFAULT_MAX_CONNECTIONS),
      idleTimeoutMs: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
      firstRequestTimeoutMs: options.firstRequestTimeoutMs ?? DEFAULT_FIRST_REQUEST_TIMEOUT_MS,
    });
    this.maxRequestBytes = options.maxRequestBytes ?? 2 ** 31 - 1;
    server.on('connection', (socket) => this.serve(socket));
    // A data port must not keep its process alive.
    server.unref();
  }

  /** Listens on `options.host` (default 127.0.0.1), and on its Unix socket unless `options.unixSockets` is false, and resolves once it does. */
  static async start(options: DirectOptions = {}): Promise<DirectServer> {
    const host = options.host ?? '127.0.0.1';
    const server = createServer({ noDelay: true });
    const direct = new DirectServer(server, options.advertise ?? host, options);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    server.on('error', () => undefined);
    direct.port = (server.address() as { port: number }).port;
    if (options.unixSockets ?? unixSocketsByDefault()) direct.unix = await listenUnixSocket(direct.port, (socket) => direct.serve(socket, true));
    return direct;
  }

  /**
   * Offers `data` to whoever presents the token in the returned header (the
   * offer holds a share of it until withdrawn; each write holds its own until
   * written). `onServed` is told each time the socket has taken all of it.
   */
  offer(data: Payload, onServed?: () => void): Offered {
    const { key, header } = this.newCapability();
    const held = holdPayload(data);
    this.offers.set(key, { data: held.data, onServed });
    return {
      header,
      withdraw: () => {
        this.offers.delete(key);
        held.release();
      },
    };
  }

  /** How this server pulls the payloads of large direct requests. */
  useFetcher(fetcher: Fetcher): void {
    this.fetcher = fetcher;
  }

  /** Lets requests and replies between processes of this host travel in shared memory. */
  useSharedMemory(segments: SharedSegments): void {
    this.segments = segments;
  }

  /** Accepts direct requests for `subject` (full, as on the bus), handled by `handler`. */
  route(subject: string, handler: RouteHandler, sinkFor?: RequestSinkFactory): ServedRoute {
    const { key, header } = this.newCapability();
    this.routes.set(key, { subject, handler, sinkFor });
    return { header, remove: () => this.routes.delete(key) };
  }

  /** True when the port also listens on its Unix socket. */
  get listensOnUnixSocket(): boolean {
    return this.unix !== undefined;
  }

  /** Closes the port and every connection; offers are dropped. */
  close(): void {
    this.unix?.close();
    this.offers.clear();
    this.routes.clear();
    this.connections.closeAll();
    this.server.close();
  }

  /** A fresh token, and the header value that names it with this port. */
  private newCapability(): { key: string; header: string } {
    const token = newToken();
    return { key: token.toString('hex'), header: formatOffer({ hostId: hostId(), host: this.advertise, port: this.port, token }) };
  }

  /** Takes a new connection (through the Unix socket when `unix`), when there is room for it, and reads its requests. */
  private serve(socket: Socket, unix = false): void {
    socket.on('error', () => undefined);
    if (!this.connections.admit()) {
      // Full of connections that all speak: this one waits for a free place (the requester retries later).
      socket.destroy();
      return;
    }
    socket.unref();
    socket.setNoDelay(true);
    const conn = new ServedConnection(socket, (served) => new RequestParser(
      (request) => {
        served.spoke = true;
        this.dispatch(served, request);
      },
      // Checked before a call's body is buffered: no memory for a call without a route.
      (token, subject) => this.routes.get(token)?.subject === subject,
      this.maxRequestBytes,
    ));
    if (unix) conn.unixPeer = unixSocketOpened(socket);
    this.connections.add(conn);
    socket.on('data', (chunk: Buffer) => {
      busyPoll.received();
      conn.active = true;
      try {
        conn.parser.feed(chunk);
      } catch {
        // Not our protocol, too large, or a failure while handling it: drop the connection, keep the process.
        socket.destroy();
      }
    });
    socket.on('close', () => {
      this.lanes.leave(socket);
      // The requester is gone: nothing it was lent can still be read through this connection.
      this.connections.remove(conn);
      if (conn.peer) this.segments?.forgetProcess(conn.peer.pid);
    });
  }

  /** Answers one request of `conn`. */
  private dispatch(conn: ServedConnection, request: DirectRequest): void {
    if (request.op === 'release') {
      const answer = conn.lent.get(request.ref.id);
      if (answer) {
        conn.lent.delete(request.ref.id);
        answer.release();
      }
      return;
    }
    if (request.op === 'lane') {
      // A connection that joins two groups, or a full one, is not following the protocol.
      if (request.index >= MAX_LANES || !this.lanes.join(conn.socket, request.group)) conn.socket.destroy();
      return;
    }
    if (request.op === 'refused') {
      this.reply(conn, request.id, REPLY_NO_ROUTE, EMPTY);
      return;
    }
    if (request.op === 'get') {
      const offered = this.offers.get(request.token);
      if (!offered) {
        this.reply(conn, request.id, REPLY_NO_ROUTE, EMPTY);
        return;
      }
      this.served++;
      // Written from the offerer's memory as it is: no copy.
      this.reply(conn, request.id, REPLY_OK, offered.data, offered.onServed);
      return;
    }
    const route = this.routes.get(request.token);
    const offer = request.op === 'pulled' ? parseOffer(request.offer) : undefined;
    const refused = !route || route.subject !== request.subject
      || (request.op === 'pulled' && (!offer || !this.fetcher || request.size > this.maxRequestBytes));
    if (refused) {
      if (request.op === 'call') request.data.release();
      this.reply(conn, request.id, REPLY_NO_ROUTE, EMPTY);
      return;
    }
    if (request.op === 'call') return this.handle(conn, { id: request.id, handler: route.handler, data: request.data });
    if (request.op === 'shm') return this.handleShared(conn, request.id, route, request.ref, request.filling);
    // Not delivered until the payload is here: a failed pull lets the requester take the bus.
    conn.busy++;
    // A request the handler can take as it arrives goes straight into its sink (tensor memory).
    let sink: FrameSink | undefined;
    const sinkFor = route.sinkFor && ((byteLength: number) => (sink = route.sinkFor!(byteLength)));
    this.fetcher!(offer!, request.size, sinkFor).then(
      (data) => {
        conn.busy--;
        this.handle(conn, { id: request.id, handler: route.handler, data, sink });
      },
      () => {
        conn.busy--;
        this.reply(conn, request.id, REPLY_NO_ROUTE, EMPTY);
      },
    ).catch(() => conn.socket.destroy());
  }

  /**
   * A request in the requester's segment: mapped here, given back once
   * decoded; the reply may go the same way. Only a segment of the process at
   * the other end of this connection is mapped; any other reference is
   * refused before anything runs, and the requester sends the bytes instead.
   * A request still `filling` is copied out as it comes, into the route's
   * sink when it gives one (tensor memory), and refused (the requester sends
   * it another way) when it stops filling.
   */
  private handleShared(conn: ServedConnection, id: number, route: { handler: RouteHandler; sinkFor: RequestSinkFactory | undefined }, ref: SegmentRef, filling: boolean): void {
    // Under way until the segment is given back.
    conn.busy++;
    let mapped = false;
    const giveBack = () => this.giveBack(conn, ref);
    let data: Frame | undefined;
    let sink: FrameSink | undefined;
    try {
      if (!this.segments) throw new Error('no shared memory here');
      const peer = this.peerOf(conn, ref.pid);
      if (!peer) throw new Error(`process ${ref.pid} is not the peer of this connection`);
      if (!filling) data = this.segments.receive(ref, giveBack, peer);
      else {
        const view = receiveFilling(this.segments, ref, giveBack, peer);
        mapped = true;
        const sinkFor = route.sinkFor;
        ({ frame: data, sink } = drainNow(view, sinkFor && (() => sinkFor(ref.length)), REQUEST_STALL_MS, REQUEST_MAX_MS));
      }
    } catch (error) {
      // Mapped, it was given back (which ends its count); else nothing was.
      if (!mapped && conn.busy > 0) conn.busy--;
      this.reply(conn, id, error instanceof FillingStalledError ? REPLY_FILL_STALLED : REPLY_NO_SHM, EMPTY);
      return;
    }
    this.handle(conn, { id, handler: route.handler, data: data ?? Frame.of(EMPTY), sink, shared: true, filling });
  }

  /** The process behind `conn`'s socket, proven once per connection from the first pid it names (see socket-peer.ts). */
  private peerOf(conn: ServedConnection, pid: number): PeerProcess | undefined {
    if (conn.peer === undefined) conn.peer = provePeer(conn.socket, pid, conn.unixPeer) ?? null;
    return conn.peer?.pid === pid ? conn.peer : undefined;
  }

  /**
   * Runs `call.handler` on a request that arrived on `conn`. `shared`: it
   * came in the requester's shared memory, and the reply may go in this
   * process's; `filling`: it came filling, and a large deferred reply may
   * go the same way.
   */
  private handle(conn: ServedConnection, { id, handler, data, shared = false, filling = false, sink }: { id: number; handler: RouteHandler; data: Frame; shared?: boolean; filling?: boolean; sink?: FrameSink }): void {
    this.calls++;
    // Under way until answered.
    conn.busy++;
    let answered = false;
    handler(data, (answer) => {
      if (answered || conn.socket.destroyed) return false;
      answered = true;
      conn.busy--;
      if (filling && this.answerFilling(conn, id, answer)) return true;
      const placed = shared && this.segments ? this.segments.place(answer) : undefined;
      if (placed?.ref) {
        this.lendReply(conn, id, REPLY_SHM, placed.ref, placed.data as Frame);
        return true;
      }
      // The writer takes its own share now, while the answer is held; ours (from place) goes after.
      try {
        return this.reply(conn, id, REPLY_OK, placed?.data ?? answer);
      } finally {
        if (placed?.data instanceof Frame) placed.data.release();
      }
    }, sink);
  }

  /**
   * Sends `answer` as a reply filling a segment of this process, when it is
   * a large deferred frame and a segment takes it: lent to the requester
   * until given back, announced, then copied in. False when it cannot go so.
   */
  private answerFilling(conn: ServedConnection, id: number, answer: Payload): boolean {
    if (!this.segments || answer instanceof Uint8Array || answer instanceof Frame) return false;
    const filling = placeFilling(this.segments, answer);
    if (!filling) return false;
    this.lendReply(conn, id, REPLY_FILLING, filling.ref, filling.frame);
    // Read while the answer is surely held (respond's caller holds it); a failure is in the word, for the requester.
    filling.fill();
    return true;
  }

  /**
   * Answers request `id` with a reference to `frame`, in this process's
   * segment `ref`: lent to the requester (taking the caller's share) until it
   * gives the segment back or the connection closes.
   */
  private lendReply(conn: ServedConnection, id: number, status: number, ref: SegmentRef, frame: Frame): void {
    if (conn.closed) frame.release();
    else conn.lent.set(ref.id, frame);
    this.reply(conn, id, status, segmentRefBytes(ref));
  }

  /** Tells the requester its segment `ref` is no longer read here. */
  private giveBack(conn: ServedConnection, ref: SegmentRef): void {
    if (conn.closed) return;
    if (conn.busy > 0) conn.busy--;
    conn.writer.write(giveBackFrame(segmentRefBytes(ref)), EMPTY);
  }

  /** Writes a reply frame; `onWritten` is told once the socket has taken all of it. */
  private reply(conn: ServedConnection, id: number, status: number, body: Payload, onWritten?: () => void): boolean {
    const written = body instanceof Uint8Array ? onWritten : () => {
      this.streamedSent++;
      onWritten?.();
    };
    // The peer that called may well call again at once.
    busyPoll.sent();
    const lanes = status === REPLY_OK && !(body instanceof Uint8Array) ? this.lanes.lanesFor(conn.socket, body.byteLength) : undefined;
    if (lanes && !(body instanceof Uint8Array)) {
      this.stripedSent++;
      // Lanes only receive: what is written on them keeps them from being swept as idle.
      const laneConnections = lanes.map((lane) => this.connections.get(lane)!);
      for (const lane of laneConnections) lane.active = true;
      return writeStriped(laneConnections.map((lane) => lane.writer), id, body, written);
    }
    return conn.writer.write(replyHeader(id, status, body.byteLength), body, written);
  }
}
