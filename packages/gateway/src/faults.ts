/**
 * XML-RPC faults: one stable `faultCode` per tensorbus error code (the table
 * of docs/gateway.md), decided by the error's `code`, never its message. The
 * `faultString` names the worker and the cause; an error that is not a
 * tensorbus error (a bug of the gateway) is only named INTERNAL, its text
 * kept for the gateway's log.
 * @module
 */
import { RemoteError, TensorbusError, type ErrorCode } from '@tensorbus/core';
import { describeError } from '@tensorbus/actors/internal';

/** faultCode of each tensorbus error code. Numbers never change meaning; new codes get new numbers. */
export const FAULT_CODES: Readonly<Record<ErrorCode, number>> = Object.freeze({
  RPC_TIMEOUT: 1,
  REMOTE_ERROR: 2,
  WORKER_UNAVAILABLE: 3,
  UNKNOWN_FUNCTION: 4,
  SERIALIZATION: 5,
  SHUTDOWN: 6,
  RREF_NOT_OWNER: 7,
  RREF_RELEASED: 8,
  RREF_CREATION_FAILED: 9,
  RREF_OWNER_LOST: 10,
  AUTOGRAD_CONTEXT_NOT_FOUND: 11,
  AUTOGRAD_BACKWARD_FAILED: 12,
  INVALID_ARGUMENT: 13,
  DUPLICATE_WORKER: 14,
  PERMISSION_DENIED: 15,
  RREF_LIMIT_EXCEEDED: 16,
  AUTOGRAD_LIMIT_EXCEEDED: 17,
  MISSING_PACKAGE: 18,
  TRANSPORT: 19,
  STREAM_LIMIT_EXCEEDED: 20,
  STREAM_LEASE_EXPIRED: 21,
  CHECKPOINT_INVALID: 22,
  REENTRANT_CALL: 23,
  GATEWAY_BAD_REQUEST: 100,
  GATEWAY_LIMIT_EXCEEDED: 101,
  GATEWAY_UNKNOWN_HANDLE: 102,
  GATEWAY_UNAUTHORIZED: 103,
});

/** faultCode of an error that is not a tensorbus error (a bug of the gateway): the interoperability spec's "internal error". */
export const INTERNAL_FAULT = -32603;

/** Longest faultString sent (a remote message can be long). */
const MAX_FAULT_STRING = 2000;

/** An XML-RPC fault. */
export interface Fault {
  faultCode: number;
  faultString: string;
  /** The tensorbus code it stands for (for the log), or 'INTERNAL'. */
  code: string;
  /** What went wrong inside the gateway, for its log only (never sent: it may quote the gateway's code). */
  detail?: string;
}

/**
 * The fault for `error`, raised while serving a call of `method` on `worker`
 * (undefined for the gateway's own methods). The string starts with the code,
 * then says which worker and what happened.
 */
export function faultOf(error: unknown, worker: string | undefined): Fault {
  if (error instanceof TensorbusError) {
    const faultCode = FAULT_CODES[error.code] ?? INTERNAL_FAULT;
    const where = error instanceof RemoteError ? ` (worker '${error.worker}')` : worker !== undefined ? ` (worker '${worker}')` : '';
    return { faultCode, faultString: clip(`${error.code}${where}: ${error.message}`), code: error.code };
  }
  const where = worker !== undefined ? ` (worker '${worker}')` : '';
  return { faultCode: INTERNAL_FAULT, faultString: `INTERNAL${where}: the gateway failed to serve this call (its log says why)`, code: 'INTERNAL', detail: describeError(error) };
}

function clip(text: string): string {
  return text.length <= MAX_FAULT_STRING ? text : `${text.slice(0, MAX_FAULT_STRING)}…`;
}
