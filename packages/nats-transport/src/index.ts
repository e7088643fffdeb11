/**
 * @tensorbus/nats-transport: the tensorbus Transport on NATS, and an embedded
 * nats-server for tests, the demo and the launcher.
 * @module
 */
export { natsTransport } from './node-connect.js';
export type { NatsTransportOptions } from './options.js';
export { startNatsServer } from './server/start-nats-server.js';
export type { NatsServer, NatsServerOptions } from './server/start-nats-server.js';
export { startNatsCluster } from './server/cluster.js';
export type { NatsCluster } from './server/cluster.js';
export { checkpointStore } from './checkpoints/checkpoint-store.js';
export type { CheckpointStore, CheckpointStoreOptions, CheckpointEntries, CheckpointExpectation } from './checkpoints/checkpoint-store.js';
export { findNatsServer, INSTALL_HINT } from './server/find-binary.js';
export type { DirectOptions } from './direct/direct-protocol.js';
export { sharedMemoryStatus } from './direct/direct-plane.js';
export type { DirectStats } from './direct/direct-plane.js';
