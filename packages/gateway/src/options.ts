/**
 * Options of `startGateway`.
 * @module
 */
import { hostname } from 'node:os';
import { InvalidArgumentError } from '@tensorbus/core';
import type { GatewayAuth } from './auth.js';
import { DEFAULT_IDENTITY } from './auth.js';
import type { IdentityConnector, NatsIdentity } from './identities.js';
import { resolveLimits, type GatewayLimits } from './limits.js';
import { defaultGatewayLogger, type GatewayLogger } from './request-log.js';
import { DEFAULT_RETRY, type RetryPolicy } from './retry.js';

/** Options of {@link startGateway}. */
export interface GatewayOptions {
  /** The tensorbus namespace (default `TENSORBUS_NAMESPACE`). */
  namespace?: string;
  /** NATS servers (default `NATS_URL`, else `nats://127.0.0.1:4222`). */
  nats?: string | string[];
  /** Makes each identity's transport instead of NATS (tests, in-process buses). */
  connect?: IdentityConnector;
  /** The gateway's worker name (default `gateway-<host>-<pid>`). */
  name?: string;
  /** HTTP port (default 8080; 0 picks a free one). */
  port?: number;
  /** Address to listen on (default 127.0.0.1). Without auth only a loopback address is accepted. */
  host?: string;
  /** HTTPS: PEM certificate chain and private key. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** HTTP basic users and bearer JWT verification; none means anonymous clients on loopback only. */
  auth?: GatewayAuth;
  /**
   * NATS credentials by identity name. Without auth, `default` (the gateway's
   * own; `{}` when not given). With auth, every identity users and tokens map to.
   */
  identities?: Record<string, NatsIdentity>;
  /** Bounds on requests and clients. */
  limits?: Partial<GatewayLimits>;
  /** Timeout of each call to a worker, ms (default 60,000; 0 = none). */
  callTimeoutMs?: number;
  /** A client silent this long loses its RRef handles, ms (default 600,000). */
  handleIdleMs?: number;
  /** Write null as `<nil/>` (default true); false makes a null result a fault, for clients that refuse nil. */
  allowNil?: boolean;
  /** Retries of calls that were never delivered (default 3 attempts, 100 ms then 200 ms apart). */
  retry?: Partial<RetryPolicy>;
  /** One line per request; `null` silences it. Default stderr (silent when TENSORBUS_QUIET=1). */
  logger?: GatewayLogger | null;
}

/** Options with their defaults. */
export interface ResolvedGatewayOptions {
  namespace: string | undefined;
  servers: string[];
  connect: IdentityConnector | undefined;
  name: string;
  port: number;
  host: string;
  tls: { cert: string | Buffer; key: string | Buffer } | undefined;
  auth: GatewayAuth | undefined;
  identities: Record<string, NatsIdentity>;
  limits: GatewayLimits;
  callTimeoutMs: number;
  handleIdleMs: number;
  allowNil: boolean;
  retry: RetryPolicy;
  logger: GatewayLogger | undefined;
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** True for an address only this host reaches. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

function nonNegative(label: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || value < 0) throw new InvalidArgumentError(`${label} must be a non-negative integer, got ${String(value)}`);
  return value;
}

const isObject = (value: unknown): value is object => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * True when `auth` configures basic users or JWT verification; false when it
 * is not given. Auth that is given but configures nothing (`{}`, `"jwt":
 * null`, no users) is an InvalidArgumentError: it would serve anyone.
 */
function authConfigured(auth: GatewayAuth | undefined): boolean {
  if (auth === undefined) return false;
  if (!isObject(auth)) throw new InvalidArgumentError('auth must be an object { basic?, jwt? }');
  if (auth.basic !== undefined && !isObject(auth.basic)) throw new InvalidArgumentError('auth.basic must be an object of users { name: { password, identity } }');
  if (auth.jwt !== undefined && !isObject(auth.jwt)) throw new InvalidArgumentError('auth.jwt must be an object { secret | publicKey | jwksUrl, ... }');
  if (Object.keys(auth.basic ?? {}).length === 0 && auth.jwt === undefined) {
    throw new InvalidArgumentError('auth configures no basic user and no JWT verification: give one, or leave auth out to serve anonymous clients on loopback only');
  }
  return true;
}

/** Applies defaults; throws InvalidArgumentError on a bad option (auth without identities, auth that configures nothing, no auth on a non-loopback address, ...). */
export function resolveGatewayOptions(options: GatewayOptions): ResolvedGatewayOptions {
  const authGiven = authConfigured(options.auth);
  const host = options.host ?? '127.0.0.1';
  if (!authGiven && !isLoopback(host)) {
    throw new InvalidArgumentError(`without auth the gateway listens on loopback only, not '${host}': configure basic users or JWT verification (auth) to accept other hosts`);
  }
  const identities = options.identities ?? (authGiven ? {} : { [DEFAULT_IDENTITY]: {} });
  if (!authGiven && !(DEFAULT_IDENTITY in identities)) throw new InvalidArgumentError(`without auth every client uses identity '${DEFAULT_IDENTITY}': give its credentials in identities`);
  if (Object.keys(identities).length === 0) throw new InvalidArgumentError('auth needs at least one NATS identity in identities');
  const servers = options.nats ?? process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
  const attempts = nonNegative('retry.attempts', options.retry?.attempts, DEFAULT_RETRY.attempts);
  return {
    namespace: options.namespace ?? process.env.TENSORBUS_NAMESPACE,
    servers: Array.isArray(servers) ? servers : servers.split(','),
    connect: options.connect,
    name: options.name ?? `gateway-${hostname().replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64)}-${process.pid}`,
    port: nonNegative('port', options.port, 8080),
    host,
    tls: options.tls,
    auth: authGiven ? options.auth : undefined,
    identities,
    limits: resolveLimits(options.limits),
    callTimeoutMs: nonNegative('callTimeoutMs', options.callTimeoutMs, 60_000),
    handleIdleMs: nonNegative('handleIdleMs', options.handleIdleMs, 600_000) || 600_000,
    allowNil: options.allowNil ?? true,
    retry: { attempts: Math.max(1, attempts), delayMs: nonNegative('retry.delayMs', options.retry?.delayMs, DEFAULT_RETRY.delayMs) },
    logger: options.logger === null ? undefined : (options.logger ?? defaultGatewayLogger()),
  };
}
