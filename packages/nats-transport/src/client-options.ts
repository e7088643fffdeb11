/**
 * The nats client's connection options made from tensorbus's, shared by the
 * Node build (options.ts, which adds what only Node has: `NATS_URL`, TLS and
 * a creds file read from disk) and the browser build (browser.ts).
 * @module
 */
import type { ConnectionOptions } from 'nats';
import { credsAuthenticator, nkeyAuthenticator } from './nats-client.js';

/** The fields of NatsTransportOptions (options.ts) that both builds turn into connection options. */
export interface ClientFields {
  name?: string;
  user?: string;
  pass?: string;
  token?: string;
  nkeySeed?: string;
  reconnect?: boolean;
  maxReconnectAttempts?: number;
  reconnectTimeWait?: number;
  timeoutMs?: number;
  inboxPrefix?: string;
  connectionOptions?: Partial<ConnectionOptions>;
}

/**
 * Connection options for `servers`, authenticated by `options`' user and
 * password, token or nkey seed, or by `creds` (the text of a creds file);
 * `tls` (Node only) goes in before the pass-through `connectionOptions`.
 */
export function clientOptions(options: ClientFields, servers: string[], creds: string | undefined, tls?: ConnectionOptions['tls']): ConnectionOptions {
  const out: ConnectionOptions = {
    servers,
    name: options.name,
    user: options.user,
    pass: options.pass,
    token: options.token,
    ...(tls === undefined ? {} : { tls }),
    reconnect: options.reconnect ?? true,
    maxReconnectAttempts: options.maxReconnectAttempts ?? -1,
    reconnectTimeWait: options.reconnectTimeWait ?? 250,
    timeout: options.timeoutMs ?? 5_000,
    inboxPrefix: options.inboxPrefix,
    pingInterval: 10_000,
    ...options.connectionOptions,
  };
  if (options.nkeySeed) out.authenticator = nkeyAuthenticator(new TextEncoder().encode(options.nkeySeed));
  if (creds) out.authenticator = credsAuthenticator(new TextEncoder().encode(creds));
  return out;
}
