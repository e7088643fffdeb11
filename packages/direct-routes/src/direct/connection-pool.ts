/**
 * The pool of direct connections of one process: one live connection per
 * data port, opened on first use and replaced once broken.
 * @module
 */
import type { ConnectionLimits } from './connection-options.js';
import type { DirectOffer } from './direct-protocol.js';
import { PeerConnection } from './peer-connection.js';
import { unixSocketFor } from './unix-socket.js';

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

  /**
   * The connection to `offer`'s data port, at `endpoint` (`host:port`, when the
   * caller has it made already): through the port's Unix socket where it is
   * on this host and this user's (unix-socket.ts), otherwise over TCP.
   */
  get(offer: DirectOffer, endpoint = `${offer.host}:${offer.port}`): PeerConnection {
    let connection = this.connections.get(endpoint);
    if (!connection || connection.broken) {
      const fresh: PeerConnection = new PeerConnection({
        ...this.limits,
        onStriped: () => this.stripedReplies++,
        endpoint,
        host: offer.host,
        port: offer.port,
        path: this.limits.unixSockets === false ? undefined : unixSocketFor(offer),
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
