/**
 * The one way tests get transports: every suite runs over each kind
 * (`for (const kind of transportKinds())`), one kind per route a call can
 * take, and NATS tests share one nats-server per test process, started on a
 * free loopback port on first use and stopped when the process exits.
 *
 * The kinds:
 * - `local`: the in-process bus (route `in-process`).
 * - `nats-bus`: NATS alone (`direct: false`): every request and reply goes
 *   through the nats-server, large ones announced and pulled in chunks.
 * - `nats-tcp`: direct routes over TCP, shared memory and Unix sockets off
 *   (`direct: { sharedMemory: false, unixSockets: false }`): a worker's
 *   calls, once the first reply named the route, go over the responder's
 *   data port.
 * - `nats-shm`: the default deployment (direct routes, shared memory between
 *   processes of one host, as between transports of one process; their
 *   connections to data ports of this host through the ports' Unix sockets).
 *
 * The conformance suite and the core actor suites (calls, RRefs,
 * distributed autograd, streams, membership) run over all four; the other
 * suites over all but `nats-tcp` (`transportKinds('without-tcp')`), whose
 * calls differ from `nats-shm`'s only below what they test, so that the
 * whole suite stays within CI's time.
 *
 * `TENSORBUS_TEST_TRANSPORTS` narrows them to a comma-separated list of
 * names (`nats` is an alias of `nats-shm`); a name it does not know is an
 * error, not a silently empty suite.
 *
 * @example
 * ```ts
 * for (const kind of transportKinds()) {
 *   test(`${kind.name} - calls - echo`, async (t) => {
 *     const transport = await kind.create({ namespace: 'ns1' });
 *   });
 * }
 * ```
 * @module
 */
import { InvalidArgumentError, localTransport, type BeaconCapable, type RouteReporting, type SinkCapable, type TransportRoute } from '@tensorbus/core';
import { natsTransport } from '../node-connect.js';
import type { NatsTransportOptions } from '../options.js';
import { startNatsServer, type NatsServer, type NatsServerOptions } from '@tensorbus/nats-server';

export { startNatsServer, type NatsServer, type NatsServerOptions } from '@tensorbus/nats-server';
export { startNatsCluster, type NatsCluster } from '@tensorbus/nats-server';
export { freePort } from '@tensorbus/nats-server';
export { exitWithParent } from './exit-with-parent.js';
export { namespacesRefused, TwoHosts, type NsProcess, type TwoHostsOptions } from './netns.js';
export { natsJwt, operatorConfig, userCreds, UNLIMITED_ACCOUNT, UNLIMITED_USER, type KeyPair } from './nats-jwt.js';

/** Options of {@link TransportKind.create}. */
export interface CreateOptions extends Partial<NatsTransportOptions> {
  /** Transports created with one namespace see each other (local: one bus). */
  namespace?: string;
}

/** The names of the transport kinds, one per route. */
export type TransportKindName = 'local' | 'nats-bus' | 'nats-tcp' | 'nats-shm';

/** What a kind's transports have: sinks and route reports always, beacons on NATS. */
export type KindTransport = SinkCapable & RouteReporting & Partial<Pick<BeaconCapable, 'startBeacon'>>;

/** A kind of transport the suites run over. */
export interface TransportKind {
  readonly name: TransportKindName;
  /** The transport's own `kind`: `'local'` or `'nats'`. */
  readonly transport: 'local' | 'nats';
  /**
   * The route a request to a subject one subscriber serves (a worker's call
   * subject) takes once its first reply named it: `transport.routeOf` then
   * says so, and the request really travels there (the conformance suite
   * checks it).
   */
  readonly route: TransportRoute;
  /** A new transport; without a namespace, a fresh one nobody else uses. */
  create(options?: CreateOptions): Promise<KindTransport>;
}

let shared: Promise<NatsServer> | undefined;
let fresh = 0;

/** The nats-server this test process shares, started on first use. */
export function sharedNatsServer(): Promise<NatsServer> {
  shared ??= startNatsServer();
  return shared;
}

/**
 * Connect timeout of the test kinds' transports, ms (the product's default is
 * 5 s): a test file runs dozens of groups at once, beside another file, on a
 * CI machine of two cores, and a clean-clone CI run saw four connects to the
 * running shared server time out at 5 s together. What the tests assert is
 * not how fast a connection opens; a test that sets `timeoutMs` keeps its own.
 */
const TEST_CONNECT_TIMEOUT_MS = 20_000;

function freshNamespace(): string {
  return `t${process.pid}n${++fresh}`;
}

/** A NATS kind: the test's options, with the kind's route settings over them. */
function natsKind(name: TransportKindName, route: TransportRoute, direct: (given: CreateOptions['direct']) => CreateOptions['direct']): TransportKind {
  return {
    name,
    transport: 'nats',
    route,
    create: async (options = {}) => {
      const server = await sharedNatsServer();
      return natsTransport({ servers: server.url, timeoutMs: TEST_CONNECT_TIMEOUT_MS, ...options, direct: direct(options.direct), namespace: options.namespace ?? freshNamespace() });
    },
  };
}

const kinds: TransportKind[] = [
  {
    name: 'local',
    transport: 'local',
    route: 'in-process',
    create: async (options = {}) => localTransport({ bus: options.namespace ?? freshNamespace() }),
  },
  natsKind('nats-bus', 'nats', () => false),
  natsKind('nats-tcp', 'tcp', (given) => (given === false ? false : { ...given, sharedMemory: false, unixSockets: false })),
  natsKind('nats-shm', 'shm', (given) => given),
];

/** Names TENSORBUS_TEST_TRANSPORTS also takes, for a kind. */
const ALIASES: Record<string, TransportKindName> = { nats: 'nats-shm' };

/** Which kinds a suite runs over: every route, or every route but the TCP one (see the module's note). */
export type KindSet = 'all' | 'without-tcp';

/** The kind `name` names (a kind's name or an alias); an InvalidArgumentError naming the known kinds when none. */
function kindNamed(name: string, where: string): TransportKind {
  const kind = kinds.find((k) => k.name === (ALIASES[name] ?? name));
  if (!kind) throw new InvalidArgumentError(`${where} names '${name}', which is no transport kind: use ${kinds.map((k) => k.name).join(', ')} (or nats for nats-shm)`);
  return kind;
}

/**
 * The transport kinds to run a suite over: `set` of them (default all), of
 * which TENSORBUS_TEST_TRANSPORTS keeps those it lists (e.g.
 * `local,nats-bus`), in the order of the module's list. A list of kinds all
 * outside `set` leaves none. Throws an InvalidArgumentError on a name it does
 * not know.
 */
export function transportKinds(set: KindSet = 'all'): TransportKind[] {
  const inSet = set === 'all' ? kinds : kinds.filter((k) => k.name !== 'nats-tcp');
  const listed = process.env.TENSORBUS_TEST_TRANSPORTS?.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (!listed?.length) return inSet;
  const wanted = listed.map((name) => kindNamed(name, 'TENSORBUS_TEST_TRANSPORTS'));
  return inSet.filter((k) => wanted.includes(k));
}

/**
 * The kind named `name` (`nats` stands for `nats-shm`), whatever
 * TENSORBUS_TEST_TRANSPORTS says, for tests about one route's mechanism.
 * Throws an InvalidArgumentError on a name it does not know.
 */
export function transportKind(name: TransportKindName): TransportKind {
  return kindNamed(name, 'transportKind');
}

/** A plain nats.js connection, for tests that act as a hostile or foreign client on the bus. */
export { connect as connectRawNats, headers as natsHeaders, type NatsConnection as RawNatsConnection } from 'nats';
export { seededRandom } from './seeded-random.js';
