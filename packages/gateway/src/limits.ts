/**
 * The bounds of what one request, and one client, can make the gateway hold
 * or do. Each is checked where the input enters, before the gateway
 * allocates, calls or keeps anything for it (docs/gateway.md, "Limits").
 * @module
 */
import { InvalidArgumentError } from '@tensorbus/core';

/** Bounds on requests and clients. */
export interface GatewayLimits {
  /** Largest request body, bytes; counted while it is read (default 8 MiB). */
  maxBodyBytes: number;
  /**
   * Bytes of request bodies the gateway holds at once, from when a body's
   * length is declared (or its bytes arrive) until it is parsed or its
   * connection ends (default 16 × `maxBodyBytes`, 128 MiB); a body past it
   * is refused with HTTP 503 and `Retry-After`. At least `maxBodyBytes`.
   */
  maxBodyBytesInFlight: number;
  /** The same, for the bodies from one client address (default 4 × `maxBodyBytes`, 32 MiB). At least `maxBodyBytes`. */
  maxBodyBytesInFlightPerAddress: number;
  /** Time a request body may take to arrive, ms (default 10,000). */
  bodyTimeoutMs: number;
  /** Deepest nesting of arrays and structs in a call or a result (default 32). */
  maxDepth: number;
  /** Most values (scalars, arrays, structs, members) in one request (default 100,000). */
  maxValues: number;
  /** Most tensor bytes one request may carry in its arguments (default 16 MiB). */
  maxTensorBytes: number;
  /** Requests one client may have in flight at once (default 8); a slot is taken once the body is read, and given back when the client goes away. */
  maxInFlightPerClient: number;
  /** RRef handles one client may hold (default 1,024). */
  maxHandlesPerClient: number;
  /**
   * RRef handles the clients of one identity may hold together (default
   * 8,192): they share one agent, which each worker bounds as one peer
   * (`peerLimits.rrefsPerPeer`, 10,000), so no crowd of clients (each 127/8
   * address is one) uses up that bound for the others.
   */
  maxHandlesPerIdentity: number;
  /** Clients whose handles or requests the gateway keeps state for at once (default 10,000). */
  maxClients: number;
  /** Open connections in all (default 512). */
  maxConnections: number;
  /** Open connections from one client address (default 64); those past it are closed at once. */
  maxConnectionsPerAddress: number;
  /** Time a connection may take to send its request headers, ms (default 10,000); then it is closed. */
  headersTimeoutMs: number;
  /** Calls one `system.multicall` may hold (default 256). */
  maxMulticall: number;
  /** Longest response the gateway writes, bytes of XML; a larger result is refused before it is encoded (default 64 MiB). */
  maxResultBytes: number;
}

/** The defaults (see {@link GatewayLimits}). */
export const DEFAULT_GATEWAY_LIMITS: Readonly<GatewayLimits> = Object.freeze({
  maxBodyBytes: 8 * 1024 * 1024,
  maxBodyBytesInFlight: 16 * 8 * 1024 * 1024,
  maxBodyBytesInFlightPerAddress: 4 * 8 * 1024 * 1024,
  bodyTimeoutMs: 10_000,
  maxDepth: 32,
  maxValues: 100_000,
  maxTensorBytes: 16 * 1024 * 1024,
  maxInFlightPerClient: 8,
  maxHandlesPerClient: 1024,
  maxHandlesPerIdentity: 8192,
  maxClients: 10_000,
  maxConnections: 512,
  maxConnectionsPerAddress: 64,
  headersTimeoutMs: 10_000,
  maxMulticall: 256,
  maxResultBytes: 64 * 1024 * 1024,
});

/**
 * `limits` over the defaults (the budgets of bodies in flight, when not
 * given, 16 and 4 times `maxBodyBytes`); throws InvalidArgumentError on a
 * value that is not a positive integer, or a budget of bodies smaller than
 * one body.
 */
export function resolveLimits(limits: Partial<GatewayLimits> = {}): GatewayLimits {
  const out = { ...DEFAULT_GATEWAY_LIMITS };
  for (const [key, value] of Object.entries(limits)) {
    if (!(key in DEFAULT_GATEWAY_LIMITS)) throw new InvalidArgumentError(`unknown gateway limit '${key}'`);
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1) throw new InvalidArgumentError(`gateway limit ${key} must be a positive integer, got ${String(value)}`);
    (out as Record<string, number>)[key] = value;
  }
  out.maxBodyBytesInFlight = limits.maxBodyBytesInFlight ?? Math.max(DEFAULT_GATEWAY_LIMITS.maxBodyBytesInFlight, 16 * out.maxBodyBytes);
  out.maxBodyBytesInFlightPerAddress = limits.maxBodyBytesInFlightPerAddress ?? Math.max(DEFAULT_GATEWAY_LIMITS.maxBodyBytesInFlightPerAddress, 4 * out.maxBodyBytes);
  for (const key of ['maxBodyBytesInFlight', 'maxBodyBytesInFlightPerAddress'] as const) {
    if (out[key] < out.maxBodyBytes) throw new InvalidArgumentError(`gateway limit ${key} (${out[key]}) must be at least maxBodyBytes (${out.maxBodyBytes}): no body of the largest size could be read`);
  }
  return out;
}
