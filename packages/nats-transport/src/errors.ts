/**
 * nats client errors as tensorbus errors.
 * @module
 */
import { PermissionDeniedError, TransportError, type TensorbusError } from '@tensorbus/core';

/** The tensorbus error for a nats client error met while connecting to `servers`. */
export function connectError(error: unknown, servers: string): TensorbusError {
  const code = (error as { code?: string }).code;
  const message = error instanceof Error ? error.message : String(error);
  if (code === 'AUTHORIZATION_VIOLATION' || code === 'BAD_AUTHENTICATION' || code === 'BAD_CREDS' || /authoriz|authentic/i.test(message)) {
    return new PermissionDeniedError(`the NATS server at ${servers} refused the credentials (${message}): check user/password, token, nkey or creds`, { cause: error });
  }
  return new TransportError(`cannot connect to NATS at ${servers}: ${message}`, { cause: error });
}

/** The tensorbus error for a permissions violation on `subject`. */
export function permissionError(operation: string, subject: string, cause?: unknown): PermissionDeniedError {
  return new PermissionDeniedError(`the NATS server refused to ${operation === 'publish' ? 'publish to' : 'subscribe to'} '${subject}' for this identity`, { cause });
}
