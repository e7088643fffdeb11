/**
 * `startGateway`: an XML-RPC server that is a member of a tensorbus
 * namespace, so any language with an XML-RPC client can call its workers.
 * See docs/gateway.md.
 * @module
 */
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { Authenticator } from './auth.js';
import { BodyBudget } from './body-budget.js';
import { HandleTable } from './handles.js';
import { IdentityAgents, type IdentityConnector } from './identities.js';
import { boundConnections } from './connections.js';
import { Listings } from './listings.js';
import { resolveGatewayOptions, type GatewayOptions, type ResolvedGatewayOptions } from './options.js';
import { serve, type GatewayParts } from './serve.js';
import { loadNatsTransport } from '@tensorbus/actors/internal';

import type { Gateway } from './running-gateway.js';

function natsConnector(options: ResolvedGatewayOptions): IdentityConnector {
  return async (_identity, credentials, workerName) => {
    const nats = await loadNatsTransport('the XML-RPC gateway needs NATS', 'or pass startGateway({ connect })');
    return nats.natsTransport({ servers: options.servers, namespace: options.namespace, name: workerName, ...credentials });
  };
}

/** Starts the gateway: what `startGateway` (start.ts) does. */
export async function launchGateway(options: GatewayOptions = {}): Promise<Gateway> {
  const resolved = resolveGatewayOptions(options);
  const auth = new Authenticator(resolved.auth, new Set(Object.keys(resolved.identities)));
  const agents = await IdentityAgents.start(resolved.name, resolved.identities, resolved.connect ?? natsConnector(resolved), resolved.callTimeoutMs);
  const inFlight = new Map<string, number>();
  const { maxHandlesPerClient, maxHandlesPerIdentity, maxClients } = resolved.limits;
  const limits = { maxHandlesPerClient, maxHandlesPerIdentity, maxClients, idleMs: resolved.handleIdleMs };
  const handles = new HandleTable(limits, (client) => inFlight.has(client));
  const parts: GatewayParts = { options: resolved, auth, agents, handles, listings: new Listings(), inFlight, bodies: new BodyBudget(resolved.limits.maxBodyBytesInFlight, resolved.limits.maxBodyBytesInFlightPerAddress) };
  const handler = (request: Parameters<typeof serve>[1], response: Parameters<typeof serve>[2]) => void serve(parts, request, response);
  // Header timeouts are checked this often (Node's default, 30 s, would let a silent connection stay three times too long).
  const checking = { connectionsCheckingInterval: Math.max(100, Math.min(1_000, resolved.limits.headersTimeoutMs / 4)) };
  const server: Server = resolved.tls ? createHttpsServer({ cert: resolved.tls.cert, key: resolved.tls.key, ...checking }, handler) : createHttpServer(checking, handler);
  boundConnections(server, resolved.limits);
  server.requestTimeout = Math.max(30_000, resolved.callTimeoutMs + 10_000);
  server.on('clientError', (_error, socket) => socket.destroy());
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(resolved.port, resolved.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    await handles.close();
    await agents.close();
    throw error;
  }
  const port = (server.address() as AddressInfo).port;
  const shownHost = resolved.host.includes(':') ? `[${resolved.host}]` : resolved.host;
  const url = `${resolved.tls ? 'https' : 'http'}://${shownHost}:${port}/RPC2`;
  resolved.logger?.info(
    `gateway: ${resolved.name} serves namespace ${JSON.stringify(resolved.namespace ?? '')} at ${url} (identities: ${Object.keys(resolved.identities).join(', ')})` +
      (auth.required ? '' : '; no auth configured: listening on loopback only'),
  );
  let closing: Promise<void> | undefined;
  return {
    url,
    port,
    name: resolved.name,
    authenticated: auth.required,
    agentNames: () => agents.names(),
    handleCount: (client) => handles.count(client),
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await handles.close();
        await agents.close();
      })()),
  };
}
