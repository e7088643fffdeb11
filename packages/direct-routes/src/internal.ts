/**
 * Everything of @tensorbus/direct-routes that sibling packages and tests
 * reach into: the wire table and the two ends of a route. Not a public API.
 * @module
 */
export * from './index.js';
export * from './direct/direct-protocol.js';
export { DirectServer } from './direct/direct-server.js';
export { DirectClient } from './direct/direct-client.js';
export { DirectCaller } from './direct/direct-caller.js';
export { SharedSegments } from './shm/shared-segments.js';
export { LearntRoutes } from './direct/direct-route.js';
