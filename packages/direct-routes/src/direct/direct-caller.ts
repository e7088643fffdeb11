/**
 * The requesting side of direct routes: sends requests to a subject's one
 * server on a pooled connection (see direct-protocol.ts).
 * @module
 */
import { Frame, payloadFrame, RequestFailure, TransportError, WorkerUnavailableError, type Payload } from '@tensorbus/core';
import { drainSoon, placeFilling, receiveFilling, REPLY_STALL_MS } from '../shm/filling.js';
import { readSegmentRef, SEGMENT_REF_BYTES, segmentRefBytes, writeSegmentRef, type SegmentRef, type SharedSegments } from '../shm/shared-segments.js';
import { provePeer, type PeerProcess } from '../shm/socket-peer.js';
import {
  CALL_HEAD_BYTES,
  giveBackFrame,
  hostId,
  OP_CALL,
  OP_CALL_FILLING,
  OP_CALL_PULLED,
  OP_CALL_SHM,
  REPLY_FILL_STALLED,
  REPLY_FILLING,
  REPLY_NO_SHM,
  REPLY_OK,
  REPLY_SHM,
  reachableFromHere,
  writeSize,
  type DirectOffer,
} from './direct-protocol.js';
import type { Offered } from './direct-server.js';
import { ConnectionPool } from './connection-pool.js';
import type { PeerConnection } from './peer-connection.js';
import { ConnectionLostError, type ReplySinkFactory } from './peer-replies.js';

/** The request was not delivered (no such route, or no connection): send it another way. */
export class RouteUnavailableError extends TransportError {
  override readonly name = 'RouteUnavailableError';
}

/** The frame of a request of `size` bytes to `subject` on the route `token`; with `offer`, the responder pulls them. */
function callHead(id: number, token: Buffer, subject: string, size: number, offer?: string): Buffer {
  const subjectBytes = Buffer.from(subject, 'utf8');
  const offerBytes = offer === undefined ? undefined : Buffer.from(offer, 'utf8');
  const head = Buffer.allocUnsafe(CALL_HEAD_BYTES + subjectBytes.length + (offerBytes ? 2 + offerBytes.length : 0) + 8);
  head[0] = offerBytes ? OP_CALL_PULLED : OP_CALL;
  head.writeUInt32BE(id, 1);
  token.copy(head, 5);
  head.writeUInt16BE(subjectBytes.length, CALL_HEAD_BYTES - 2);
  subjectBytes.copy(head, CALL_HEAD_BYTES);
  if (offerBytes) {
    head.writeUInt16BE(offerBytes.length, CALL_HEAD_BYTES + subjectBytes.length);
    offerBytes.copy(head, CALL_HEAD_BYTES + subjectBytes.length + 2);
  }
  writeSize(head, head.length - 8, size);
  return head;
}

/** The frame of a request to `subject` that lies in the requester's segment `ref` (still `filling` it, or whole). */
function sharedCallHead(id: number, token: Buffer, subject: string, ref: SegmentRef, filling: boolean): Buffer {
  const subjectBytes = Buffer.from(subject, 'utf8');
  const head = Buffer.allocUnsafe(CALL_HEAD_BYTES + subjectBytes.length + SEGMENT_REF_BYTES);
  head[0] = filling ? OP_CALL_FILLING : OP_CALL_SHM;
  head.writeUInt32BE(id, 1);
  token.copy(head, 5);
  head.writeUInt16BE(subjectBytes.length, CALL_HEAD_BYTES - 2);
  subjectBytes.copy(head, CALL_HEAD_BYTES);
  writeSegmentRef(head, CALL_HEAD_BYTES + subjectBytes.length, ref);
  return head;
}

/** What a broken connection means for a request on it. */
function lostError(error: ConnectionLostError, subject: string, delivered: boolean): Error {
  // Before the connection opened nothing was delivered; after, the request may have run and
  // its responder is gone (a process whose port closes has died or closed its transport).
  if (!delivered) return new RouteUnavailableError(error.message, { cause: error });
  return new WorkerUnavailableError(`the responder of '${subject}' went away with the request in flight (${error.message})`, { cause: error, reason: RequestFailure.ResponderLost });
}

/** A request placed in this process's shared memory (see {@link DirectCaller.callShared}). */
interface SharedCall {
  subject: string;
  token: Buffer;
  data: Frame;
  ref: SegmentRef;
  replySink: ReplySinkFactory | undefined;
  /** Copies the request into its segment once announced (a filling request; see shm/filling.ts). */
  fill?: () => Error | undefined;
}

/** The request's segment stopped filling before the responder had it: nothing was delivered. */
const STALLED = Symbol('stalled');

/** Sends requests over direct routes, one pooled connection per data port. */
export class DirectCaller {
  /** Requests answered over direct routes so far (for tests and the benchmark). */
  calls = 0;
  /** Of those, requests that went as a shared-memory reference, and replies that came as one. */
  sharedRequests = 0;
  sharedReplies = 0;
  /** Of those, requests and replies that were read while they filled their segment. */
  fillingRequests = 0;
  fillingReplies = 0;
  /** Replies read into a reply sink. */
  streamedReceived = 0;

  /** Replies that came striped over lanes. */
  get stripedReceived(): number {
    return this.pool.stripedReplies;
  }
  // Calls may take any time: no stall timeout; a dead responder closes the connection,
  // and its segments are no longer kept mapped here.
  private readonly pool: ConnectionPool;
  private readonly self = hostId();
  /** Data ports whose process cannot map this one's segments. */
  private readonly noSharedMemory = new Set<string>();
  /** Each route's `host:port`, made once (a route is used for every call to its subject). */
  private readonly endpoints = new WeakMap<DirectOffer, string>();
  /**
   * The process shown to hold the other end of each connection that sent
   * replies in shared memory, or null when the first pid it named was not.
   */
  private readonly responders = new WeakMap<PeerConnection, PeerProcess | null>();

  /**
   * @param offer offers a large payload on this process's data port (for the
   *   responder to pull), or undefined to send it inline
   * @param segments shared memory, when this process has it
   * @param maxReplyBytes a reply declared larger fails its call, unallocated
   * @param idleCloseMs connections with nothing under way for this long are closed (0: never)
   * @param lanes connections kept to another host's port once large replies come from it (see reply-lanes.ts)
   */
  constructor(
    private readonly offer: (data: Payload, onServed: () => void) => Offered | undefined = () => undefined,
    private readonly segments?: SharedSegments,
    maxReplyBytes = 2 ** 31 - 1,
    idleCloseMs = 0,
    lanes = 1,
  ) {
    this.pool = new ConnectionPool({ maxReplyBytes, idleCloseMs, lanes }, (_endpoint, connection) => {
      const responder = this.responders.get(connection);
      if (responder) this.segments?.forgetProcess(responder.pid);
    });
  }

  /** How requests on `route` travel: in this host's shared memory (frames that fit a segment), or over TCP. */
  medium(route: DirectOffer): 'shm' | 'tcp' {
    return this.sharesMemory(route, this.endpointOf(route)) ? 'shm' : 'tcp';
  }

  /** `host:port` of `route`, made once per route. */
  private endpointOf(route: DirectOffer): string {
    let endpoint = this.endpoints.get(route);
    if (endpoint === undefined) this.endpoints.set(route, (endpoint = `${route.host}:${route.port}`));
    return endpoint;
  }

  /** True when requests on `route` (at `endpoint`) may go in shared memory. */
  private sharesMemory(route: DirectOffer, endpoint: string): boolean {
    return this.segments !== undefined && route.hostId === this.self && !this.noSharedMemory.has(endpoint);
  }

  /** True when `route` can be used from here (a loopback endpoint only on the same host). */
  usable(route: DirectOffer): boolean {
    return reachableFromHere(route);
  }

  /**
   * Sends `payload` to `subject` over `route`. Rejects with
   * RouteUnavailableError when it was not delivered, WorkerUnavailableError
   * when the connection broke after. A large reply may go into a sink
   * `replySink` gives (the promise then resolves with an empty frame).
   * `payload` must stay held until the promise settles; the reply is the
   * caller's frame.
   */
  async call(route: DirectOffer, subject: string, payload: Payload, replySink?: ReplySinkFactory): Promise<Frame> {
    const endpoint = this.endpointOf(route);
    const connection = this.pool.get(route.host, route.port, endpoint);
    let sunk = false;
    const sink = replySink && ((byteLength: number) => {
      const taken = replySink(byteLength);
      sunk = taken !== undefined;
      return taken;
    });
    const shares = this.sharesMemory(route, endpoint);
    // A large deferred request is announced first and copied in while the responder copies it out.
    const filling = shares && !(payload instanceof Uint8Array) && !(payload instanceof Frame) ? placeFilling(this.segments!, payload) : undefined;
    if (filling) {
      const reply = await this.callShared(connection, { subject, token: route.token, data: filling.frame, ref: filling.ref, replySink: sink, fill: filling.fill });
      if (sunk) this.streamedReceived++;
      if (reply === undefined) this.noSharedMemory.add(endpoint);
      // Stalled (the responder could not wait for it): sent again below, whole.
      if (reply instanceof Frame) return reply;
    }
    const placed = shares && !this.noSharedMemory.has(endpoint) ? this.segments!.place(payload) : undefined;
    if (placed?.ref) {
      // The frame in the segment goes as a reference; callShared takes that share.
      const reply = await this.callShared(connection, { subject, token: route.token, data: placed.data as Frame, ref: placed.ref, replySink: sink });
      if (sunk) this.streamedReceived++;
      if (reply instanceof Frame) return reply;
      // The responder cannot map this process's memory: send the bytes, from now on.
      this.noSharedMemory.add(endpoint);
    }
    // Not in a segment: what place() already read goes as it is (a deferred payload is not read out twice).
    const read = !placed?.ref && placed?.data instanceof Frame ? placed.data : undefined;
    const body: Payload = read ?? payload;
    // The offer holds its own share until withdrawn, once the responder has pulled every byte.
    let served = false;
    const offered = this.offer(body, () => {
      served = true;
      offered?.withdraw();
    });
    // Small requests go inline, whole (a share of their own, held until written).
    const inline = offered ? undefined : payloadFrame(body);
    try {
      const { status, data: reply } = await (offered
        ? connection.request((id) => callHead(id, route.token, subject, payload.byteLength, offered.header), undefined, sink)
        : connection.request((id) => callHead(id, route.token, subject, inline!.byteLength), inline, sink));
      if (sunk) this.streamedReceived++;
      if (status !== REPLY_OK) {
        reply.release();
        // Pulled, then refused: the bytes are gone from here, so the bus cannot take over.
        if (served) throw new TransportError(`the responder of '${subject}' took the request but could not keep it`);
        throw new RouteUnavailableError('the responder no longer serves this subject directly');
      }
      this.calls++;
      return reply;
    } catch (error) {
      if (!(error instanceof ConnectionLostError)) throw error;
      throw lostError(error, subject, error.delivered || served);
    } finally {
      offered?.withdraw();
      inline?.release();
      read?.release();
    }
  }

  /**
   * Sends a request to `subject` on the route `token` that lies in this
   * process's segment `ref` as a reference, taking the share `data` (lent to
   * the responder until it gives it back); a reply too large for shared
   * memory may go into `replySink`. Resolves undefined when the responder
   * cannot map it, STALLED when a filling request stopped filling before
   * the responder had it (nothing delivered either way).
   */
  private async callShared(connection: PeerConnection, call: SharedCall): Promise<Frame | undefined | typeof STALLED> {
    const { subject, token, data, ref, replySink, fill } = call;
    connection.lend(ref, data);
    let status: number;
    let body: Frame;
    let unread: Error | undefined;
    try {
      // A reply too large for shared memory comes as bytes, and may go into the sink.
      const replied = connection.request((id) => sharedCallHead(id, token, subject, ref, fill !== undefined), undefined, replySink);
      // Announced (written, unless the connection is still opening): copied in while the responder copies out.
      unread = fill?.();
      ({ status, data: body } = await replied);
    } catch (error) {
      if (!(error instanceof ConnectionLostError)) throw error;
      throw lostError(error, subject, error.delivered);
    }
    if (status === REPLY_OK || status === REPLY_SHM || status === REPLY_FILLING) {
      this.sharedRequests++;
      if (fill) this.fillingRequests++;
    }
    if (status === REPLY_OK) {
      this.calls++;
      return body;
    }
    if (status === REPLY_SHM || status === REPLY_FILLING) {
      const bytes = body.bytes;
      const replyRef = bytes.byteLength === SEGMENT_REF_BYTES ? readSegmentRef(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0) : undefined;
      body.release();
      // The request ran: whatever is wrong with its reply, it must not be sent again.
      if (!replyRef) throw new TransportError(`the responder of '${subject}' sent a malformed shared-memory reply`);
      this.calls++;
      // Only the responder's own memory is mapped: a reply naming a third process's segment is refused.
      let responder = this.responders.get(connection);
      if (responder === undefined) this.responders.set(connection, (responder = provePeer(connection.ends, replyRef.pid) ?? null));
      // Counted until given back: the connection is not idle while the responder's memory is read here.
      const returned = connection.borrow();
      const giveBack = () => {
        returned();
        connection.send(giveBackFrame(segmentRefBytes(replyRef)));
      };
      let mapped = false;
      try {
        if (responder?.pid !== replyRef.pid) throw new Error(`process ${replyRef.pid} is not the responder at the other end`);
        if (status === REPLY_SHM) {
          const reply = this.segments!.receive(replyRef, giveBack, responder);
          this.sharedReplies++;
          return reply;
        }
        const view = receiveFilling(this.segments!, replyRef, giveBack, responder);
        mapped = true;
        // Into the sink when it takes it (tensor memory), else whole; either way given back once read.
        const { frame } = await drainSoon(view, replySink && (() => replySink(replyRef.length)), REPLY_STALL_MS);
        this.sharedReplies++;
        this.fillingReplies++;
        return frame ?? Frame.of(new Uint8Array(0));
      } catch (error) {
        // Mapped, it was given back when the drain let go of it.
        if (!mapped) giveBack();
        throw new TransportError(`cannot ${mapped ? 'read' : 'map'} the reply of '${subject}' in shared memory: ${(error as Error).message}`, { cause: error });
      }
    }
    body.release();
    // Refused: the responder never read the request, which is still this transport's to send.
    connection.unlend(ref)?.release();
    // It could not be read here either: the same error as any other way of sending it.
    if (unread) throw unread;
    if (status === REPLY_FILL_STALLED) return STALLED;
    if (status === REPLY_NO_SHM) return undefined;
    throw new RouteUnavailableError('the responder no longer serves this subject directly');
  }

  /** Closes every connection; pending requests fail. */
  close(): void {
    this.pool.close();
  }
}
