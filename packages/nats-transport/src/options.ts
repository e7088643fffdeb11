/**
 * Options of `natsTransport`, and their translation to the nats client's
 * connection options (servers, auth, TLS, reconnect).
 * @module
 */
import { readFileSync } from 'node:fs';
import type { DirectOptions } from '@tensorbus/direct-routes';
import type { ConnectionOptions } from 'nats';
import { clientOptions } from './client-options.js';

/** Options of {@link natsTransport}. */
export interface NatsTransportOptions {
  /** One URL or several (a cluster), e.g. `nats://127.0.0.1:4222`. Default `NATS_URL` or localhost. */
  servers?: string | string[];
  /** Prefixes every subject (`<namespace>.`): groups in different namespaces never see each other. */
  namespace?: string;
  /** Connection name shown by the server's monitoring. */
  name?: string;
  /** User and password authentication. */
  user?: string;
  pass?: string;
  /** Token authentication. */
  token?: string;
  /** NKey seed (text of an `SU...` seed) for nkey authentication. */
  nkeySeed?: string;
  /** A `.creds` file (JWT + nkey seed) for decentralized (operator) authentication. */
  credsFile?: string;
  /** The text of a `.creds` file. */
  creds?: string;
  /** TLS: `{ caFile, certFile, keyFile }` or any node TLS options the nats client takes. */
  tls?: ConnectionOptions['tls'];
  /** Reconnect on connection loss (default true, forever). */
  reconnect?: boolean;
  maxReconnectAttempts?: number;
  reconnectTimeWait?: number;
  /** Prefix of reply inboxes (default `_INBOX`); set it where account permissions require one. */
  inboxPrefix?: string;
  /** Give up a chunked transfer after this long without progress, ms (default 10,000). */
  chunkTimeoutMs?: number;
  /** Largest payload accepted in chunks, bytes (default 2 GiB). */
  maxTransferBytes?: number;
  /**
   * The direct data plane: a TCP port per transport that carries, beside
   * NATS, (1) every request to a subject only one subscriber serves (a
   * worker's calls) once its first reply named the route, whatever its size,
   * with the bytes in shared memory between processes of one host; and (2)
   * payloads of at least `minBytes` (128 KiB) sent on the bus, which their
   * receivers fetch from it instead of pulling NATS chunks. NATS is the
   * fallback whenever a route or a fetch cannot deliver. Default on,
   * listening on 127.0.0.1 (same-host peers); `false` (or TENSORBUS_DIRECT=0)
   * sends everything through NATS. It is plaintext: when the NATS connection
   * uses TLS it stays on loopback whatever `host`/`advertise` say, so nothing
   * crosses the network in clear (same-host calls keep it, and shared memory).
   */
  direct?: false | DirectOptions;
  /**
   * Heartbeats from a thread of their own (the process's beacon, with a NATS
   * connection of its own), so a worker whose main thread computes for long
   * is not declared failed. Default true; `false` (or TENSORBUS_BEACON=0)
   * leaves them to the main thread alone. See docs/rpc.md (failure detection).
   */
  beacon?: boolean;
  /** Connection timeout, ms (default 5,000). */
  timeoutMs?: number;
  /** Pass-through of other nats client options. */
  connectionOptions?: Partial<ConnectionOptions>;
}

/** Translates tensorbus options into the nats client's. */
export function connectionOptions(options: NatsTransportOptions): ConnectionOptions {
  const servers = options.servers ?? process.env.NATS_URL ?? '127.0.0.1:4222';
  const creds = options.creds ?? (options.credsFile ? readFileSync(options.credsFile, 'utf8') : undefined);
  return clientOptions(options, Array.isArray(servers) ? servers : servers.split(','), creds, options.tls);
}

/**
 * True when the NATS connection is encrypted: TLS options given, a `tls://`
 * server, or a server that requires TLS (`info` is what it announced). The
 * direct data plane then stays on this host (see DirectPlane.start).
 */
export function busEncrypted(options: NatsTransportOptions, servers: string[], info: { tls_required?: boolean; tls_verify?: boolean } | undefined): boolean {
  return Boolean(options.tls) || servers.some((url) => url.trim().toLowerCase().startsWith('tls://')) || Boolean(info?.tls_required || info?.tls_verify);
}
