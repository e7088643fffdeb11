/**
 * The one way tests get transports: every suite runs over each kind
 * (`for (const kind of transportKinds())`), and NATS tests share one
 * nats-server per test process, started on a free loopback port on first use
 * and stopped when the process exits. `TENSORBUS_TEST_TRANSPORTS=local` (or
 * `nats`) narrows the kinds.
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
import { localTransport, type Transport } from '@tensorbus/core';
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

/** A kind of transport the suites run over. */
export interface TransportKind {
  readonly name: 'local' | 'nats';
  /** A new transport; without a namespace, a fresh one nobody else uses. */
  create(options?: CreateOptions): Promise<Transport>;
}

let shared: Promise<NatsServer> | undefined;
let fresh = 0;

/** The nats-server this test process shares, started on first use. */
export function sharedNatsServer(): Promise<NatsServer> {
  shared ??= startNatsServer();
  return shared;
}

function freshNamespace(): string {
  return `t${process.pid}n${++fresh}`;
}

const kinds: TransportKind[] = [
  {
    name: 'local',
    create: async (options = {}) => localTransport({ bus: options.namespace ?? freshNamespace() }),
  },
  {
    name: 'nats',
    create: async (options = {}) => {
      const server = await sharedNatsServer();
      return natsTransport({ servers: server.url, ...options, namespace: options.namespace ?? freshNamespace() });
    },
  },
];

/** The transport kinds to run suites over (all, unless TENSORBUS_TEST_TRANSPORTS narrows them). */
export function transportKinds(): TransportKind[] {
  const wanted = process.env.TENSORBUS_TEST_TRANSPORTS?.split(',').map((s) => s.trim());
  return wanted ? kinds.filter((k) => wanted.includes(k.name)) : kinds;
}

/** A plain nats.js connection, for tests that act as a hostile or foreign client on the bus. */
export { connect as connectRawNats, headers as natsHeaders, type NatsConnection as RawNatsConnection } from 'nats';
export { seededRandom } from './seeded-random.js';
