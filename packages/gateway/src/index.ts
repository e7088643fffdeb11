/**
 * @tensorbus/gateway: an XML-RPC server that is a member of a tensorbus
 * namespace, so that any language with an XML-RPC client can call its
 * workers (docs/gateway.md). `tensorbus gateway` runs it from the command
 * line (the `./cli` entry, loaded by the `tensorbus` command of
 * `@tensorbus/actors`).
 * @module
 */
export { startGateway } from './start.js';
export type { Gateway } from './start.js';
export type { GatewayOptions } from './options.js';
export type { GatewayAuth, BasicUser, JwtAuth } from './auth.js';
export type { NatsIdentity, IdentityConnector } from './identities.js';
export type { GatewayLimits } from './limits.js';
export { DEFAULT_GATEWAY_LIMITS } from './limits.js';
export type { GatewayLogger } from './request-log.js';
export type { RetryPolicy } from './retry.js';
export { FAULT_CODES } from './faults.js';
export { GatewayError } from './errors.js';
export type { GatewayErrorCode } from './errors.js';
