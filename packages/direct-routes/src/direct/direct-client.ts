/**
 * The receiving side of the direct data plane: fetches offered payloads over
 * pooled connections, each read straight into its own buffer.
 * @module
 */
import { TransportError, type Frame } from '@tensorbus/core';
import { getFrame, reachableFromHere, REPLY_OK, type DirectOffer } from './direct-protocol.js';
import { ConnectionPool } from './connection-pool.js';
import type { ReplySinkFactory } from './peer-replies.js';

/** How long an endpoint that failed is not tried again, ms. */
const FAILED_ENDPOINT_PAUSE_MS = 30_000;

/** Fetches offered payloads, one pooled connection per data port. */
export class DirectClient {
  /** Payloads fetched directly so far (for tests and the benchmark). */
  fetched = 0;
  private readonly failedUntil = new Map<string, number>();
  private readonly pool: ConnectionPool;

  /**
   * @param stallTimeoutMs a fetch that makes no progress for this long fails
   * @param idleCloseMs connections with nothing under way for this long are closed
   * @param lanes connections kept to another host's port once large payloads come from it (see reply-lanes.ts)
   * @param unixSockets connect to data ports of this host through their Unix sockets (unix-socket.ts)
   */
  constructor(stallTimeoutMs: number, idleCloseMs = 0, lanes = 1, unixSockets = true) {
    this.pool = new ConnectionPool({ stallTimeoutMs, idleCloseMs, lanes, unixSockets }, (endpoint) => this.failedUntil.set(endpoint, Date.now() + FAILED_ENDPOINT_PAUSE_MS));
  }

  /** Payloads that came striped over lanes (for tests and the benchmark). */
  get striped(): number {
    return this.pool.stripedReplies;
  }

  /** True when `offer` can be tried from here (a loopback endpoint only on the same host). */
  reachable(offer: DirectOffer): boolean {
    if (!reachableFromHere(offer)) return false;
    const until = this.failedUntil.get(`${offer.host}:${offer.port}`);
    return until === undefined || until < Date.now();
  }

  /**
   * Fetches the payload of `offer`, of `size` bytes (checked against the
   * limit by the caller), as the caller's frame; rejects with TransportError
   * on any failure. A reply of any other size fails the fetch before
   * anything is allocated for it. A sink `sink` gives takes the bytes as
   * they arrive; the frame is then empty.
   */
  async fetch(offer: DirectOffer, size: number, sink?: ReplySinkFactory): Promise<Frame> {
    let sunk = false;
    const sinkFor = sink && ((byteLength: number) => {
      const taken = sink(byteLength);
      sunk = taken !== undefined;
      return taken;
    });
    const { status, data } = await this.pool.get(offer).request((id) => getFrame(id, offer.token), undefined, sinkFor, { exact: size });
    if (status !== REPLY_OK || data.byteLength !== (sunk ? 0 : size)) {
      data.release();
      throw new TransportError(status !== REPLY_OK ? 'the sender no longer offers this payload' : `the offer announced ${size} bytes but carries ${data.byteLength}`);
    }
    this.failedUntil.delete(`${offer.host}:${offer.port}`);
    this.fetched++;
    return data;
  }

  /** Closes every connection. */
  close(): void {
    this.pool.close();
  }
}
