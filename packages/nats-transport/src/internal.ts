/**
 * Everything of @tensorbus/nats-transport, for sibling packages and tests.
 * Not a public API.
 * @module
 */
export * from './index.js';
export { NatsTransport } from './nats-transport.js';
export { connectionOptions } from './options.js';
export { freePort, waitForPort } from '@tensorbus/nats-server';
export * from './chunks/chunk-protocol.js';
export { sendChunked } from './chunks/chunk-sender.js';
export { receiveChunked, isAnnouncement } from './chunks/chunk-receiver.js';
export * from '@tensorbus/direct-routes/internal';
export { beaconStats } from './beacon/beacon-host.js';
export type { BeaconStats } from './beacon/beacon-host.js';
