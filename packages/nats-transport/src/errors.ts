/**
 * nats client errors as tensorbus errors.
 * @module
 */
import { PermissionDeniedError, TransportError, type TensorbusError } from '@tensorbus/core';

/** The nats client's codes for credentials the server refused (or that expired). */
const REFUSED_CREDENTIALS = new Set(['AUTHORIZATION_VIOLATION', 'BAD_AUTHENTICATION', 'BAD_CREDS', 'AUTHENTICATION_EXPIRED', 'ACCOUNT_EXPIRED']);

/** The same refusals as classes of nats.js v3 (`@nats-io/nats-core`, the browser's client), which have no code. */
const REFUSED_CREDENTIALS_V3 = new Set(['AuthorizationError', 'UserAuthenticationExpiredError']);

/** The tensorbus error for a nats client error met while connecting to `servers`, decided by its code (v2) or class (v3). */
export function connectError(error: unknown, servers: string): TensorbusError {
  const code = String((error as { code?: unknown }).code ?? '');
  const message = error instanceof Error ? error.message : String(error);
  if (REFUSED_CREDENTIALS.has(code) || (error instanceof Error && REFUSED_CREDENTIALS_V3.has(error.name))) {
    return new PermissionDeniedError(`the NATS server at ${servers} refused the credentials (${message}): check user/password, token, nkey or creds`, { cause: error });
  }
  return new TransportError(`cannot connect to NATS at ${servers}: ${message}`, { cause: error });
}

/** TLS failures reported by node and the nats client, by code, with what they mean for the user. */
const TLS_CAUSES: Array<[RegExp, string]> = [
  [/ALERT_BAD_CERTIFICATE|ALERT_CERTIFICATE_REQUIRED|ALERT_UNKNOWN_CA|ALERT_CERTIFICATE_UNKNOWN|ECONNRESET|EPIPE/, "the server refused this client's TLS certificate (or required one): check certFile/keyFile and that the server's ca_file signs them"],
  [/UNABLE_TO_VERIFY|SELF_SIGNED|CERT_UNTRUSTED|ERR_TLS_CERT_ALTNAME|CERT_HAS_EXPIRED|CERT_NOT_YET_VALID/, "this client cannot verify the server's TLS certificate: check caFile and the server's certificate"],
];

/**
 * The tensorbus error for a failed TLS connection attempt (`cause`, made with
 * reconnection off so that it reports the handshake's own error): a refused
 * client certificate is a PermissionDeniedError, anything else a TransportError.
 */
export function tlsError(cause: unknown, servers: string): TensorbusError | undefined {
  const code = String((cause as { code?: unknown }).code ?? '');
  const message = cause instanceof Error ? cause.message : String(cause);
  for (const [pattern, meaning] of TLS_CAUSES) {
    // Decided by the error's code (node's and OpenSSL's), never by its text.
    if (!pattern.test(code)) continue;
    const text = `TLS connection to NATS at ${servers} failed: ${meaning} (${message})`;
    return meaning.startsWith('the server refused') ? new PermissionDeniedError(text, { cause }) : new TransportError(text, { cause });
  }
  return undefined;
}

/** The tensorbus error for a permissions violation on `subject`. */
export function permissionError(operation: string, subject: string, cause?: unknown): PermissionDeniedError {
  return new PermissionDeniedError(`the NATS server refused to ${operation === 'publish' ? 'publish to' : 'subscribe to'} '${subject}' for this identity`, { cause });
}

/**
 * A permissions violation the nats client reported, as `{ operation, subject }`,
 * or undefined: nats 2.x puts it in a status's `permissionContext`, nats.js v3
 * (the browser's client) in a `PermissionViolationError` with the same fields.
 */
export function permissionViolation(status: { permissionContext?: unknown; error?: unknown }): { operation: string; subject: string } | undefined {
  const context = (status.permissionContext ?? (status.error instanceof Error && status.error.name === 'PermissionViolationError' ? status.error : undefined)) as { operation?: unknown; subject?: unknown } | undefined;
  if (typeof context?.operation !== 'string' || typeof context.subject !== 'string') return undefined;
  return { operation: context.operation, subject: context.subject };
}
