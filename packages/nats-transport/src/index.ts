/**
 * @tensorbus/nats-transport: the tensorbus Transport on NATS. It re-exports
 * @tensorbus/nats-server's launcher (a nats-server for tests, the demo and
 * `tensorbus launch`), so one install gives a worker both.
 * @module
 */
export { natsTransport } from './node-connect.js';
export type { NatsTransportOptions } from './options.js';
export { startNatsServer, startNatsCluster, findNatsServer, INSTALL_HINT } from '@tensorbus/nats-server';
export type { NatsServer, NatsServerOptions, NatsCluster } from '@tensorbus/nats-server';
export { checkpointStore } from './checkpoints/checkpoint-store.js';
export type { CheckpointStore, CheckpointStoreOptions, CheckpointEntries, CheckpointExpectation } from './checkpoints/checkpoint-store.js';
export type { DirectOptions, DirectStats } from '@tensorbus/direct-routes';
export { sharedMemoryStatus, unixSocketsByDefault } from '@tensorbus/direct-routes';
