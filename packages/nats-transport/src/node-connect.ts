/**
 * `natsTransport()` in Node: connects with the `nats` client (TCP), opens the
 * direct data plane and the beacon thread, and returns a {@link NatsTransport}.
 * A page takes browser.ts instead (package.json `exports`, "browser").
 * @module
 */
import type { ConnectionOptions, NatsConnection } from 'nats';
import { TransportError, type BeaconCapable, type BeaconSpec, type RouteReporting, type SinkCapable } from '@tensorbus/core';
import { beaconHost } from './beacon/beacon-host.js';
import type { BeaconConnectionOptions } from './beacon/beacon-protocol.js';
import { DEFAULT_CHUNK_TIMEOUT_MS } from './chunks/chunk-protocol.js';
import { checkBusyPollUs, DirectPlane, lanesOption } from '@tensorbus/direct-routes';
import { connectError, tlsError } from './errors.js';
import { connect } from './nats-client.js';
import { NatsTransport } from './nats-transport.js';
import { busEncrypted, connectionOptions, type NatsTransportOptions } from './options.js';
import { checkSubject } from './subject-check.js';

/** The options a beacon connection is made from; undefined when beacons are off. */
function beaconConnection(options: NatsTransportOptions): BeaconConnectionOptions | undefined {
  if (options.beacon === false || process.env.TENSORBUS_BEACON === '0') return undefined;
  const { namespace: _namespace, direct: _direct, name: _name, chunkTimeoutMs: _chunk, maxTransferBytes: _max, beacon: _beacon, ...connection } = options;
  // Resolved here: the thread's environment is a copy taken when it started.
  const resolved = { ...connection, servers: connection.servers ?? process.env.NATS_URL ?? '127.0.0.1:4222' };
  try {
    // Options holding functions (an authenticator, a TLS callback) cannot be handed to a thread.
    structuredClone(resolved);
  } catch {
    return undefined;
  }
  return resolved;
}

/**
 * Connects to NATS and returns a Transport, with every capability (sinks,
 * route reports, beacons).
 *
 * @example
 * ```ts
 * const transport = await natsTransport({ servers: 'nats://127.0.0.1:4222', namespace: 'team-a', user: 'a', pass: 's3cret' });
 * const agent = await initRpc({ name: 'w0', transport });
 * ```
 * @throws PermissionDeniedError when the server refuses the credentials; TransportError when it cannot be reached.
 */
export async function natsTransport(options: NatsTransportOptions = {}): Promise<SinkCapable & RouteReporting & BeaconCapable> {
  // Checked before anything is opened: a refused namespace leaves no connection behind.
  if (options.namespace) checkSubject(options.namespace, 'subject');
  if (options.inboxPrefix !== undefined) checkSubject(options.inboxPrefix, 'reply subject');
  if (options.direct && options.direct.busyPollUs !== undefined) checkBusyPollUs(options.direct.busyPollUs);
  if (options.direct) lanesOption(options.direct.lanes);
  const connection = connectionOptions(options);
  const directOff = options.direct === false || process.env.TENSORBUS_DIRECT === '0';
  const nc = await connectReporting(connection, options.tls !== undefined);
  let direct: DirectPlane | undefined;
  if (!directOff) {
    try {
      const encrypted = busEncrypted(options, connection.servers as string[], nc.info);
      direct = await DirectPlane.start(options.direct || {}, {
        stallTimeoutMs: options.chunkTimeoutMs ?? DEFAULT_CHUNK_TIMEOUT_MS,
        maxTransferBytes: options.maxTransferBytes ?? 2 ** 31 - 1,
        confined: encrypted,
      });
    } catch (error) {
      await nc.close();
      throw new TransportError(`cannot open the direct data port: ${(error as Error).message} (set direct: false to go through NATS only)`, { cause: error });
    }
  }
  const beacon = beaconConnection(options);
  const startBeacon = beacon && ((subject: string, spec: BeaconSpec) => beaconHost.add(beacon, subject, spec));
  return new NatsTransport(nc, options, direct, startBeacon);
}

/**
 * Connects, saying what failed. With TLS, a server that refuses the client's
 * certificate closes the connection after the handshake; a client that
 * reconnects only retries it until its timeout and reports a bare TIMEOUT. So
 * a second attempt with reconnection off runs beside the real one: its own
 * error names the TLS failure at once, and the real one is dropped.
 */
async function connectReporting(connection: ConnectionOptions, tls: boolean): Promise<NatsConnection> {
  const servers = String(connection.servers);
  const real = connect(connection);
  if (!tls) {
    try {
      return await real;
    } catch (error) {
      throw connectError(error, servers);
    }
  }
  const probe = connect({ ...connection, reconnect: false, maxReconnectAttempts: 0, name: `${connection.name ?? 'tensorbus'} (tls check)` }).then(
    (nc) => {
      void nc.close();
      return undefined;
    },
    (error: unknown) => tlsError(error, servers),
  );
  const diagnosed = probe.then((error) => (error ? Promise.reject(error) : new Promise<never>(() => undefined)));
  try {
    return await Promise.race([real, diagnosed]);
  } catch (error) {
    // Whichever failed first: the real attempt must not linger connected or reconnecting.
    void real.then((nc) => nc.close(), () => undefined);
    if (error instanceof TransportError || (error as { code?: string }).code === 'PERMISSION_DENIED') throw error;
    throw (await probe) ?? connectError(error, servers);
  }
}
