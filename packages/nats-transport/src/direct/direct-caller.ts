/**
 * The requesting side of direct routes: sends requests to a subject's one
 * server on a pooled connection (see direct-protocol.ts).
 * @module
 */
import { TransportError, WorkerUnavailableError } from '@tensorbus/core';
import { markReceived, releaseBuffer } from '@tensorbus/core/internal';
import { CALL_HEAD_BYTES, hostId, isLoopback, OP_CALL, OP_CALL_PULLED, REPLY_OK, writeSize, type DirectOffer } from './direct-protocol.js';
import type { Offered } from './direct-server.js';
import { ConnectionLostError, ConnectionPool } from './peer-connection.js';

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

/** Sends requests over direct routes, one pooled connection per data port. */
export class DirectCaller {
  /** Requests answered over direct routes so far (for tests and the benchmark). */
  calls = 0;
  // Calls may take any time: no stall timeout; a dead responder closes the connection.
  private readonly pool = new ConnectionPool(undefined);
  private readonly self = hostId();

  /**
   * @param offer offers a large payload on this process's data port (for the
   *   responder to pull), or undefined to send it inline
   */
  constructor(private readonly offer: (data: Uint8Array, onServed: () => void) => Offered | undefined = () => undefined) {}

  /** True when `route` can be used from here (a loopback endpoint only on the same host). */
  usable(route: DirectOffer): boolean {
    return !(isLoopback(route.host) && route.hostId !== this.self);
  }

  /**
   * Sends `data` to `subject` over `route`. Rejects with RouteUnavailableError
   * when it was not delivered, WorkerUnavailableError when the connection
   * broke after.
   */
  async call(route: DirectOffer, subject: string, data: Uint8Array): Promise<Uint8Array> {
    const connection = this.pool.get(route.host, route.port);
    // Once the responder has pulled every byte, the request's memory can hold the reply (or the next one).
    let served = false;
    const offered = this.offer(data, () => {
      served = true;
      offered?.withdraw();
      releaseBuffer(data);
    });
    try {
      // Small requests go inline (they are never pooled memory); large ones are pulled.
      const { status, data: reply } = await (offered
        ? connection.request((id) => callHead(id, route.token, subject, data.byteLength, offered.header))
        : connection.request((id) => callHead(id, route.token, subject, data.byteLength), data));
      if (status !== REPLY_OK) {
        releaseBuffer(reply);
        // Pulled, then refused: the bytes are gone from here, so the bus cannot take over.
        if (served) throw new TransportError(`the responder of '${subject}' took the request but could not keep it`);
        throw new RouteUnavailableError('the responder no longer serves this subject directly');
      }
      this.calls++;
      markReceived(reply);
      return reply;
    } catch (error) {
      if (!(error instanceof ConnectionLostError)) throw error;
      // Before the connection opened nothing was delivered; after, the request may have run and
      // its responder is gone (a process whose port closes has died or closed its transport).
      if (!error.delivered && !served) throw new RouteUnavailableError(error.message, { cause: error });
      throw new WorkerUnavailableError(`the responder of '${subject}' went away with the request in flight (${error.message})`, { cause: error });
    } finally {
      offered?.withdraw();
    }
  }

  /** Closes every connection; pending requests fail. */
  close(): void {
    this.pool.close();
  }
}
