/**
 * @tensorbus/direct-routes: the routes a call takes beside the NATS bus, in
 * Node: a direct connection from caller to callee (requests, replies,
 * payloads fetched by their receiver; over TCP, or between processes of one
 * host and user through the data port's Unix socket) and, between two
 * processes of one host, shared memory (memfd segments the peer maps; only a
 * reference crosses that connection). Each is a `Route` (route.ts).
 * `@tensorbus/nats-transport` offers and uses them; the wire format is one table at the top of
 * `src/direct/direct-protocol.ts`, the spec is docs/data-plane.md.
 * @module
 */
export { DirectPlane, sharedMemoryStatus } from './direct/direct-plane.js';
export type { DirectStats, DirectPlaneLimits } from './direct/direct-plane.js';
export type { DirectOptions } from './direct/direct-protocol.js';
export { lanesOption } from './direct/direct-protocol.js';
export { checkBusyPollUs } from './direct/busy-poll.js';
export { unixSocketsByDefault } from './direct/unix-socket.js';
export { H_DIRECT, H_ROUTE } from './direct/direct-headers.js';
export type { Offered } from './direct/direct-server.js';
export { DirectRoute } from './direct/direct-route.js';
export { SharedMemoryRoute } from './shm/shm-route.js';
export type { Route, RoutedRequest, ReplySinkFactory, Undelivered } from './route.js';
