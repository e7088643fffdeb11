/**
 * The names every side of the federation agrees on, with no platform in
 * them: a page imports this module as a Node worker does.
 * @module
 */

/** The tensorbus namespace of every worker (the accounts' subjects start with it). */
export const NAMESPACE = 'fedavg';

/** The aggregation server's worker name and NATS user (account SERVER). */
export const SERVER_NAME = 'server';
