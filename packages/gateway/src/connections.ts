/**
 * Bounds on the gateway's connections: in all (`server.maxConnections`), per
 * client address (a connection past its address's bound is closed at once),
 * and in time (a connection that has not sent its request headers within
 * `headersTimeoutMs` is closed, an idle kept-alive one after 5 s), so no one
 * local process holding connections locks the others out or uses up the
 * gateway's file descriptors.
 * @module
 */
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { GatewayLimits } from './limits.js';

/** How long a kept-alive connection may sit idle between requests, ms. */
const KEEP_ALIVE_MS = 5_000;

/** Applies `limits`' connection bounds to `server` (before it listens). */
export function boundConnections(server: Server, limits: GatewayLimits): void {
  server.maxConnections = limits.maxConnections;
  server.headersTimeout = limits.headersTimeoutMs;
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  const byAddress = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '?';
    const open = (byAddress.get(address) ?? 0) + 1;
    if (open > limits.maxConnectionsPerAddress) {
      socket.destroy();
      return;
    }
    byAddress.set(address, open);
    socket.once('close', () => {
      const left = (byAddress.get(address) ?? 1) - 1;
      if (left > 0) byAddress.set(address, left);
      else byAddress.delete(address);
    });
  });
}
