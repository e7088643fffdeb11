/**
 * The gateway's own error class and codes. They are added to core's
 * `ErrorCode` by declaration merging (`ExtensionErrorCodes`): core knows no
 * gateway. A `GatewayError` never travels between workers (the gateway
 * answers its client with a fault, faults.ts), so core's wire has no
 * rebuilder for it.
 * @module
 */
import { TensorbusError, type TensorbusErrorOptions } from '@tensorbus/core';

declare module '@tensorbus/core' {
  interface ExtensionErrorCodes {
    GATEWAY_BAD_REQUEST: true;
    GATEWAY_LIMIT_EXCEEDED: true;
    GATEWAY_UNKNOWN_HANDLE: true;
    GATEWAY_UNAUTHORIZED: true;
  }
}

/**
 * Codes of the XML-RPC gateway's own refusals (docs/gateway.md): a body that
 * is not a well-formed XML-RPC call, a limit passed, a handle this client does
 * not hold, a request without valid credentials.
 */
export type GatewayErrorCode = 'GATEWAY_BAD_REQUEST' | 'GATEWAY_LIMIT_EXCEEDED' | 'GATEWAY_UNKNOWN_HANDLE' | 'GATEWAY_UNAUTHORIZED';

/** The XML-RPC gateway refused a request before anything ran on a worker. */
export class GatewayError extends TensorbusError {
  declare readonly code: GatewayErrorCode;
  constructor(code: GatewayErrorCode, message: string, options: TensorbusErrorOptions = {}) {
    super(code, message, options);
  }
}
