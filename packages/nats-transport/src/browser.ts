/**
 * @tensorbus/nats-transport in a browser (package.json `exports`, condition
 * "browser"): `natsTransport()` over NATS WebSocket (`@nats-io/nats-core`). A page has
 * no TCP socket, no shared memory and no threads of its own to spare, so
 * there is no direct data plane and no beacon thread: every message goes
 * through the server, payloads beyond its `max_payload` in chunks (the same
 * chunk protocol as Node's, so a tab and a Node worker exchange any size).
 * @module
 */
import type { Transport } from '@tensorbus/core';
import { connectError } from './errors.js';
import { clientOptions } from './client-options.js';
import { connect } from './nats-client.js';
import { NatsTransport } from './nats-transport.js';
import type { NatsTransportOptions } from './options.js';
import { checkSubject } from './subject-check.js';

/**
 * Options of the browser's {@link natsTransport}: Node's, less what a page
 * cannot have (a creds file, TLS options: a `wss://` URL is TLS; the direct
 * data plane; the beacon thread).
 */
export type BrowserNatsTransportOptions = Omit<NatsTransportOptions, 'servers' | 'credsFile' | 'tls' | 'direct' | 'beacon'> & {
  /** The server's WebSocket URL or URLs: `ws://127.0.0.1:9222`, `wss://bus.example.org`. */
  servers: string | string[];
};

/** What a page cannot be given, refused by name rather than ignored. */
const NODE_ONLY = ['credsFile', 'tls', 'direct', 'beacon'] as const;

/**
 * Connects a page to NATS over WebSocket and returns a Transport.
 *
 * @example
 * ```ts
 * import { natsTransport } from '@tensorbus/nats-transport'; // the browser build, through the bundler
 * const agent = await initRpc({ name: 'tab-1', transport: await natsTransport({ servers: 'ws://127.0.0.1:9222', token }) });
 * ```
 * @throws PermissionDeniedError when the server refuses the credentials; TransportError when it cannot be reached.
 */
export async function natsTransport(options: BrowserNatsTransportOptions): Promise<Transport> {
  for (const key of NODE_ONLY) {
    if ((options as Record<string, unknown>)[key] !== undefined) throw new TypeError(`natsTransport in a browser takes no '${key}' (see docs/browser.md)`);
  }
  if (options.namespace) checkSubject(options.namespace, 'subject');
  if (options.inboxPrefix !== undefined) checkSubject(options.inboxPrefix, 'reply subject');
  const servers = Array.isArray(options.servers) ? options.servers : options.servers.split(',');
  const connection = clientOptions(options, servers, options.creds);
  let nc;
  try {
    nc = await connect(connection);
  } catch (error) {
    throw connectError(error, servers.join(','));
  }
  return new NatsTransport(nc, { ...options, servers });
}

export type { NatsTransportOptions } from './options.js';
