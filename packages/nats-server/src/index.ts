/**
 * @tensorbus/nats-server: finds Debian's (or any) `nats-server` binary and
 * runs it for development, tests, the demo and `tensorbus launch`: one server
 * on a free loopback port (with JetStream, WebSocket, accounts as asked), or a
 * cluster of them. It depends on nothing but Node; `@tensorbus/nats-transport`
 * re-exports it.
 * @module
 */
export { startNatsServer } from './start-nats-server.js';
export type { NatsServer, NatsServerOptions } from './start-nats-server.js';
export { startNatsCluster } from './cluster.js';
export type { NatsCluster } from './cluster.js';
export { findNatsServer, INSTALL_HINT } from './find-binary.js';
export { freePort, waitForPort } from './free-port.js';
