/**
 * Errors on the wire: one plain shape for every error, and the one place where
 * it is turned back into the right class.
 * @module
 */
import {
  AutogradError,
  DuplicateWorkerError,
  InvalidArgumentError,
  PermissionDeniedError,
  RemoteError,
  RpcTimeoutError,
  RRefError,
  SerializationError,
  ShutdownError,
  TensorbusError,
  TransportError,
  UnknownFunctionError,
  WorkerUnavailableError,
  type AutogradErrorCode,
  type ErrorCode,
  type RRefErrorCode,
} from './errors.js';

/** An error as it travels: enough to rebuild it on the other side. */
export interface WireError {
  name: string;
  message: string;
  stack?: string;
  code?: string;
  /** For REMOTE_ERROR: the worker that raised the original error. */
  worker?: string;
  /** For REMOTE_ERROR: the original error's name and message. */
  remoteName?: string;
  remoteMessage?: string;
  remoteStack?: string;
  remoteCode?: string;
}

/** Turns any thrown value into its wire shape. */
export function errorToWire(error: unknown): WireError {
  if (error instanceof RemoteError) {
    return {
      name: error.name,
      message: error.message,
      stack: error.stack,
      code: error.code,
      worker: error.worker,
      remoteName: error.remoteName,
      remoteMessage: error.remoteMessage,
      remoteStack: error.remoteStack,
      remoteCode: error.remoteCode,
    };
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      stack: error.stack,
      code: typeof code === 'string' ? code : undefined,
    };
  }
  return { name: 'Error', message: describeThrown(error) };
}

function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

const rebuilders: Partial<Record<ErrorCode, (message: string) => TensorbusError>> = {
  RPC_TIMEOUT: (m) => new RpcTimeoutError(m),
  WORKER_UNAVAILABLE: (m) => new WorkerUnavailableError(m),
  UNKNOWN_FUNCTION: (m) => new UnknownFunctionError(m),
  SERIALIZATION: (m) => new SerializationError(m),
  SHUTDOWN: (m) => new ShutdownError(m),
  INVALID_ARGUMENT: (m) => new InvalidArgumentError(m),
  DUPLICATE_WORKER: (m) => new DuplicateWorkerError(m),
  PERMISSION_DENIED: (m) => new PermissionDeniedError(m),
  TRANSPORT: (m) => new TransportError(m),
};
for (const code of ['RREF_NOT_OWNER', 'RREF_RELEASED', 'RREF_CREATION_FAILED', 'RREF_OWNER_LOST'] as RRefErrorCode[]) {
  rebuilders[code] = (m) => new RRefError(code, m);
}
for (const code of ['AUTOGRAD_CONTEXT_NOT_FOUND', 'AUTOGRAD_BACKWARD_FAILED'] as AutogradErrorCode[]) {
  rebuilders[code] = (m) => new AutogradError(code, m);
}

/**
 * Rebuilds a tensorbus error of the right class from its wire shape, keeping
 * the remote stack. Errors that are not tensorbus errors come back as plain
 * `Error`s with the original name.
 */
export function errorFromWire(wire: WireError): Error {
  if (wire.code === 'REMOTE_ERROR' && wire.worker !== undefined) {
    const error = new RemoteError({
      worker: wire.worker,
      remoteName: wire.remoteName ?? 'Error',
      remoteMessage: wire.remoteMessage ?? wire.message,
      remoteStack: wire.remoteStack,
      remoteCode: wire.remoteCode,
    });
    return error;
  }
  const rebuild = wire.code === undefined ? undefined : rebuilders[wire.code as ErrorCode];
  const error: Error = rebuild ? rebuild(wire.message) : new Error(wire.message);
  if (!rebuild) {
    error.name = wire.name;
    if (wire.code !== undefined) (error as { code?: string }).code = wire.code;
  }
  if (wire.stack !== undefined) error.stack = wire.stack;
  return error;
}

/**
 * Wraps what a remote function threw as a {@link RemoteError} raised by
 * `worker`. Tensorbus errors with their own meaning (an unknown function, an
 * autograd failure) keep their class so callers can check their codes.
 */
export function remoteErrorFrom(worker: string, error: unknown): WireError {
  if (error instanceof TensorbusError && error.code !== 'REMOTE_ERROR') return errorToWire(error);
  if (error instanceof RemoteError) return errorToWire(error);
  const wire = errorToWire(error);
  return {
    name: 'RemoteError',
    message: `worker '${worker}' raised ${wire.name}: ${wire.message}`,
    code: 'REMOTE_ERROR',
    worker,
    remoteName: wire.name,
    remoteMessage: wire.message,
    remoteStack: wire.stack,
    remoteCode: wire.code,
  };
}
