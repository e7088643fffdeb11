/**
 * Shared memory as a {@link Route}: between two processes of one host, a
 * request's frame lies in a segment of the requester's memory and only its
 * 32-byte reference crosses the connection to the responder's data port
 * (the TCP route's pooled connection: a route is a way the bytes travel,
 * not a socket). It carries a subject whose learnt route is of this host,
 * while that port has not refused shared memory. A frame no segment holds
 * (small frames, frames beyond the segment limit, own segments at their
 * bound) and a request the responder refuses to map (NO SHM) are handed
 * back undelivered, to the TCP route. A large deferred frame goes filling
 * (announced before it is in its segment, ./filling.ts); one that stalls
 * goes again whole in a segment, on this route. See docs/data-plane.md.
 * @module
 */
import { Frame, TransportError, type Payload } from '@tensorbus/core';
import type { HeldPayload } from '@tensorbus/core/internal';
import { RouteUnavailableError, lostError, type DirectCaller } from '../direct/direct-caller.js';
import { CALL_HEAD_BYTES, giveBackFrame, hostId, OP_CALL_FILLING, OP_CALL_SHM, REPLY_FILL_STALLED, REPLY_FILLING, REPLY_NO_SHM, REPLY_OK, REPLY_SHM, type DirectOffer } from '../direct/direct-protocol.js';
import type { LearntRoutes } from '../direct/direct-route.js';
import type { PeerConnection } from '../direct/peer-connection.js';
import { ConnectionLostError } from '../direct/peer-replies.js';
import type { ReplySinkFactory, Route, RoutedRequest, Undelivered } from '../route.js';
import { drainSoon, placeFilling, receiveFilling, REPLY_STALL_MS } from './filling.js';
import { readSegmentRef, SEGMENT_REF_BYTES, segmentRefBytes, writeSegmentRef, type SegmentRef, type SharedSegments } from './shared-segments.js';
import { provePeer, type PeerProcess } from './socket-peer.js';

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

/** A request placed in this process's shared memory (see {@link SharedMemoryRoute.callShared}). */
interface SharedCall {
  subject: string;
  token: Buffer;
  data: Frame;
  ref: SegmentRef;
  replySink: ReplySinkFactory | undefined;
  /** Copies the request into its segment once announced (a filling request; see filling.ts). */
  fill?: () => Error | undefined;
}

/** The request's segment stopped filling before the responder had it: nothing was delivered. */
const STALLED = Symbol('stalled');

/** Requests to processes of this host, sent as references to this process's segments. */
export class SharedMemoryRoute implements Route {
  /** Requests sent as a reference and delivered, and replies received as one (for tests and the benchmark). */
  sharedRequests = 0;
  sharedReplies = 0;
  /** Of those, requests and replies that were read while they filled their segment. */
  fillingRequests = 0;
  fillingReplies = 0;

  private readonly self = hostId();
  /** Data ports whose process cannot map this one's segments. */
  private readonly refused = new Set<string>();
  /**
   * The process shown to hold the other end of each connection that sent
   * replies in shared memory, or null when the first pid it named was not.
   */
  private readonly responders = new WeakMap<PeerConnection, PeerProcess | null>();

  /**
   * @param routes the routes learnt from replies (shared with the TCP route)
   * @param caller the pooled connections (shared with the TCP route), and its counts of calls
   * @param segments this process's segments and its mappings of others'
   */
  constructor(
    private readonly routes: LearntRoutes,
    private readonly caller: DirectCaller,
    private readonly segments: SharedSegments,
  ) {}

  /** True when `subject`'s learnt route is a data port of this host that has not refused shared memory. */
  carries(subject: string): boolean {
    const route = this.routes.get(subject);
    return route !== undefined && route.hostId === this.self && !this.refused.has(this.caller.endpointOf(route));
  }

  medium(): 'shm' {
    return 'shm';
  }

  /** Sends `request` as a reference to its frame's segment, or hands it back undelivered when no segment holds it. */
  send<Request extends RoutedRequest>(request: Request, data: HeldPayload, replySink: ReplySinkFactory | undefined, undelivered: Undelivered<Request>): void {
    const subject = request.subject;
    const route = this.routes.get(subject);
    if (route === undefined || !this.mayHold(data)) return undelivered(this, request, data, replySink);
    this.call(route, subject, data, replySink).then(
      (reply) => (reply === undefined ? undelivered(this, request, data, replySink) : request.resolve(reply)),
      (error: Error) => {
        if (!(error instanceof RouteUnavailableError)) return request.reject(error);
        this.routes.forget(subject, route);
        undelivered(this, request, data, replySink);
      },
    );
  }

  /** Drops what was mapped of the responder behind `connection` (it broke). */
  connectionBroken(connection: PeerConnection): void {
    const responder = this.responders.get(connection);
    if (responder) this.segments.forgetProcess(responder.pid);
  }

  /**
   * False for a payload no segment will hold, known without reading it: a
   * frame in heap memory (frames below the buffer pool's threshold are
   * encoded there), a deferred frame beyond the segment limit.
   */
  private mayHold(data: HeldPayload): boolean {
    if (data instanceof Frame) return this.segments.refOf(data.bytes) !== undefined;
    return data.byteLength <= this.segments.maxFrameBytes;
  }

  /**
   * Sends `payload` to `subject` over `route` as a reference. Resolves the
   * reply, or undefined when it was not delivered and may go as bytes: the
   * responder cannot map this process's memory (the port is then refused
   * shared memory from now on), or no segment took the frame. Rejects with
   * RouteUnavailableError when it was not delivered at all (NO ROUTE, no
   * connection), else with the error of a delivered request.
   */
  private async call(route: DirectOffer, subject: string, payload: Payload, replySink: ReplySinkFactory | undefined): Promise<Frame | undefined> {
    const endpoint = this.caller.endpointOf(route);
    const connection = this.caller.connectionTo(route, endpoint);
    let sunk = false;
    const sink = replySink && ((byteLength: number) => {
      const taken = replySink(byteLength);
      sunk = taken !== undefined;
      return taken;
    });
    let reply: Frame | undefined | typeof STALLED;
    // A large deferred request is announced first and copied in while the responder copies it out.
    const filling = payload instanceof Uint8Array || payload instanceof Frame ? undefined : placeFilling(this.segments, payload);
    if (filling) reply = await this.callShared(connection, { subject, token: route.token, data: filling.frame, ref: filling.ref, replySink: sink, fill: filling.fill });
    // Not filling, or stalled (the responder could not wait for it): whole in a segment.
    if ((reply === undefined && filling === undefined) || reply === STALLED) {
      const placed = this.segments.place(payload);
      if (placed.ref === undefined) {
        // No segment took it (own segments at their bound): the TCP route sends the payload as it is.
        if (placed.data instanceof Frame) placed.data.release();
        return undefined;
      }
      // The frame in the segment goes as a reference; callShared takes that share.
      reply = await this.callShared(connection, { subject, token: route.token, data: placed.data as Frame, ref: placed.ref, replySink: sink });
    }
    if (sunk) this.caller.streamedReceived++;
    if (reply instanceof Frame) return reply;
    // The responder cannot map this process's memory: its bytes, from now on.
    this.refused.add(endpoint);
    return undefined;
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
      this.caller.calls++;
      return body;
    }
    if (status === REPLY_SHM || status === REPLY_FILLING) return this.sharedReply(connection, subject, status, body, replySink);
    body.release();
    // Refused: the responder never read the request, which is still this transport's to send.
    connection.unlend(ref)?.release();
    // It could not be read here either: the same error as any other way of sending it.
    if (unread) throw unread;
    if (status === REPLY_FILL_STALLED) return STALLED;
    if (status === REPLY_NO_SHM) return undefined;
    throw new RouteUnavailableError('the responder no longer serves this subject directly');
  }

  /**
   * The reply that lies (`status` SHM) or is filling (FILLING) in the
   * responder's segment whose reference is `body`: mapped only when it is
   * the memory of the process proven to hold the other end of `connection`,
   * read (into `replySink`'s sink when it takes it), and given back.
   */
  private async sharedReply(connection: PeerConnection, subject: string, status: number, body: Frame, replySink: ReplySinkFactory | undefined): Promise<Frame> {
    const bytes = body.bytes;
    const replyRef = bytes.byteLength === SEGMENT_REF_BYTES ? readSegmentRef(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0) : undefined;
    body.release();
    // The request ran: whatever is wrong with its reply, it must not be sent again.
    if (!replyRef) throw new TransportError(`the responder of '${subject}' sent a malformed shared-memory reply`);
    this.caller.calls++;
    // Only the responder's own memory is mapped: a reply naming a third process's segment is refused.
    let responder = this.responders.get(connection);
    if (responder === undefined) this.responders.set(connection, (responder = provePeer(connection.ends, replyRef.pid, connection.unixPeer) ?? null));
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
        const reply = this.segments.receive(replyRef, giveBack, responder);
        this.sharedReplies++;
        return reply;
      }
      const view = receiveFilling(this.segments, replyRef, giveBack, responder);
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
}
