/**
 * The requesting side of direct routes: the pooled connections to data
 * ports (one per port), and the sending of a request's bytes on one (the
 * TCP route, direct-route.ts); the shared-memory route (../shm/shm-route.ts)
 * sends its references on the same connections. See direct-protocol.ts.
 * @module
 */
import { Frame, payloadFrame, RequestFailure, TransportError, WorkerUnavailableError, type Payload } from '@tensorbus/core';
import { callHead, REPLY_OK, type DirectOffer } from './direct-protocol.js';
import type { Offered } from './direct-server.js';
import { ConnectionPool } from './connection-pool.js';
import type { PeerConnection } from './peer-connection.js';
import { ConnectionLostError, type ReplySinkFactory } from './peer-replies.js';

/** The request was not delivered (no such route, or no connection): send it another way. */
export class RouteUnavailableError extends TransportError {
  override readonly name = 'RouteUnavailableError';
}

/** What a broken connection means for a request on it, `delivered` or not. */
export function lostError(error: ConnectionLostError, subject: string, delivered: boolean): Error {
  // Before the connection opened nothing was delivered; after, the request may have run and
  // its responder is gone (a process whose port closes has died or closed its transport).
  if (!delivered) return new RouteUnavailableError(error.message, { cause: error });
  return new WorkerUnavailableError(`the responder of '${subject}' went away with the request in flight (${error.message})`, { cause: error, reason: RequestFailure.ResponderLost });
}

/** Sends requests over direct routes, one pooled connection per data port. */
export class DirectCaller {
  /** Requests answered over direct routes so far, either medium (for tests and the benchmark). */
  calls = 0;
  /** Replies read into a reply sink. */
  streamedReceived = 0;

  /** Replies that came striped over lanes. */
  get stripedReceived(): number {
    return this.pool.stripedReplies;
  }
  // Calls may take any time: no stall timeout; a dead responder closes the connection.
  private readonly pool: ConnectionPool;
  /** Each route's `host:port`, made once (a route is used for every call to its subject). */
  private readonly endpoints = new WeakMap<DirectOffer, string>();

  /**
   * @param offer offers a large payload on this process's data port (for the
   *   responder to pull), or undefined to send it inline
   * @param maxReplyBytes a reply declared larger fails its call, unallocated
   * @param idleCloseMs connections with nothing under way for this long are closed (0: never)
   * @param lanes connections kept to another host's port once large replies come from it (see reply-lanes.ts)
   * @param onBroken told of each connection that breaks (not of those closed as idle)
   * @param unixSockets connect to data ports of this host through their Unix sockets (unix-socket.ts)
   */
  constructor(
    private readonly offer: (data: Payload, onServed: () => void) => Offered | undefined = () => undefined,
    maxReplyBytes = 2 ** 31 - 1,
    idleCloseMs = 0,
    lanes = 1,
    onBroken: (connection: PeerConnection) => void = () => undefined,
    unixSockets = true,
  ) {
    this.pool = new ConnectionPool({ maxReplyBytes, idleCloseMs, lanes, unixSockets }, (_endpoint, connection) => onBroken(connection));
  }

  /** `host:port` of `route`, made once per route. */
  endpointOf(route: DirectOffer): string {
    let endpoint = this.endpoints.get(route);
    if (endpoint === undefined) this.endpoints.set(route, (endpoint = `${route.host}:${route.port}`));
    return endpoint;
  }

  /** The live connection to `route`'s data port at `endpoint` (opened now if there is none). */
  connectionTo(route: DirectOffer, endpoint: string): PeerConnection {
    return this.pool.get(route, endpoint);
  }

  /**
   * Sends `payload` to `subject` over `route`, as bytes: inline, or offered
   * for the responder to pull when large. Rejects with
   * RouteUnavailableError when it was not delivered, WorkerUnavailableError
   * when the connection broke after. A large reply may go into a sink
   * `replySink` gives (the promise then resolves with an empty frame).
   * `payload` must stay held until the promise settles; the reply is the
   * caller's frame.
   */
  async call(route: DirectOffer, subject: string, payload: Payload, replySink?: ReplySinkFactory): Promise<Frame> {
    const connection = this.connectionTo(route, this.endpointOf(route));
    let sunk = false;
    const sink = replySink && ((byteLength: number) => {
      const taken = replySink(byteLength);
      sunk = taken !== undefined;
      return taken;
    });
    // The offer holds its own share until withdrawn, once the responder has pulled every byte.
    let served = false;
    const offered = this.offer(payload, () => {
      served = true;
      offered?.withdraw();
    });
    // Small requests go inline, whole (a share of their own, held until written).
    const inline = offered ? undefined : payloadFrame(payload);
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
    }
  }

  /** Closes every connection; pending requests fail. */
  close(): void {
    this.pool.close();
  }
}
