/**
 * `@tensorbus/nats-transport`, loaded only where it is needed.
 *
 * RPC semantics run on any `Transport`, so `@tensorbus/actors` depends on
 * `@tensorbus/core` alone and lists the NATS transport as an optional peer.
 * Three things need NATS: the default transport when `NATS_URL` is set, and
 * the `tensorbus launch` / `tensorbus status` commands. They load it here, at
 * run time; when it is not installed they get a {@link MissingPackageError}
 * saying what to install, instead of a bare module-not-found.
 *
 * The module's face is declared here (the few members used), not imported as
 * a type: a type import would bring the package back into the build of
 * actors' sources.
 * @module
 */
import { MissingPackageError, type Transport } from '@tensorbus/core';
import { resolveOptional } from './optional-package.js';

/** The package name, in one place. */
const NATS_TRANSPORT_PACKAGE = '@tensorbus/nats-transport';

/** The options of `natsTransport()` that actors passes. */
export interface NatsConnectOptions {
  servers: string[];
  namespace?: string;
  name?: string;
  /** Credentials (the XML-RPC gateway connects once per NATS identity). */
  user?: string;
  pass?: string;
  token?: string;
  nkeySeed?: string;
  credsFile?: string;
}

/** A nats-server started by `startNatsServer()`. */
export interface StartedNatsServer {
  url: string;
  pid: number | undefined;
  /** `ws://127.0.0.1:<port>` when started with `websocket`. */
  wsUrl?: string | undefined;
  stop(): Promise<void>;
}

/** What actors uses of `@tensorbus/nats-transport`. */
export interface NatsTransportModule {
  natsTransport(options: NatsConnectOptions): Promise<Transport>;
  startNatsServer(options: { ownProcessGroup?: boolean; jetstream?: boolean; websocket?: { port: number; quiet: boolean } }): Promise<StartedNatsServer>;
}

let loading: Promise<NatsTransportModule> | undefined;

/**
 * Loads `@tensorbus/nats-transport` (once per process).
 * @param needer - who needs it, for the error: e.g. "NATS_URL is set".
 * @param otherwise - the alternative offered, e.g. "or pass initRpc({ transport })".
 * @throws MissingPackageError when the package is not installed, or does not
 *   export what actors uses (a version that does not match).
 */
export async function loadNatsTransport(needer: string, otherwise: string): Promise<NatsTransportModule> {
  const missing = (detail: string, cause?: unknown) =>
    new MissingPackageError(`${needer} but ${NATS_TRANSPORT_PACKAGE} ${detail}: npm i ${NATS_TRANSPORT_PACKAGE}, ${otherwise}`, {
      packageName: NATS_TRANSPORT_PACKAGE,
      cause,
    });
  const url = resolveOptional(NATS_TRANSPORT_PACKAGE);
  if (url === undefined) throw missing('is not installed');
  loading ??= import(url).then((mod: Partial<NatsTransportModule>) => {
    if (typeof mod.natsTransport !== 'function' || typeof mod.startNatsServer !== 'function') {
      throw missing('does not export natsTransport and startNatsServer (a version that does not match @tensorbus/actors)');
    }
    return mod as NatsTransportModule;
  });
  try {
    return await loading;
  } catch (error) {
    loading = undefined;
    throw error;
  }
}

/**
 * The default transport of a worker when `NATS_URL` is set: NATS at those
 * servers (comma-separated), in `namespace`.
 * @throws MissingPackageError when `@tensorbus/nats-transport` is not installed.
 */
export async function natsTransportFromUrl(servers: string, namespace: string | undefined, name: string): Promise<Transport> {
  const nats = await loadNatsTransport('NATS_URL is set', 'or pass a transport: initRpc({ transport })');
  return nats.natsTransport({ servers: servers.split(','), namespace, name });
}
