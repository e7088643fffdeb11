/**
 * The NATS headers by which the direct data plane is offered (kept apart from
 * direct-protocol.ts, which is Node's, so the bus code that reads them runs in
 * a browser too).
 * @module
 */

/** Header of an announcement that offers a direct fetch. */
export const H_DIRECT = 'tb-direct';
/** Header of a reply that offers a direct route for later requests to its subject. */
export const H_ROUTE = 'tb-route';
