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
  MissingPackageError,
  RemoteError,
  RpcTimeoutError,
  RRefError,
  SerializationError,
  StreamError,
  ShutdownError,
  TensorbusError,
  TransportError,
  CheckpointError,
  ReentrantCallError,
  UnknownFunctionError,
  WorkerUnavailableError,
  type AutogradErrorCode,
  type RRefErrorCode,
  type StreamErrorCode,
  type TensorbusErrorOptions,
} from './errors.js';

/** An error as it travels: enough to rebuild it on the other side. Absent fields are omitted. */
export interface WireError {
  name: string;
  message: string;
  stack?: string;
  /** A tensorbus error code, or any string `code` the error had (e.g. Node's 'ECONNRESET'). */
  code?: string;
  /** Tensorbus errors only: whether retrying may succeed. */
  retryable?: boolean;
  /** The error's `cause`, when that was an error itself. */
  cause?: WireError;
  /** For REMOTE_ERROR: the worker that raised the original error. */
  worker?: string;
  /** For REMOTE_ERROR: the original error's name, message, stack and code. */
  remoteName?: string;
  remoteMessage?: string;
  remoteStack?: string;
  remoteCode?: string;
}

/** How many `cause` links travel; deeper ones (and cycles) are cut. */
export const MAX_WIRE_CAUSES = 8;

/** Turns any thrown value into its wire shape, with up to `maxCauses` links of its `cause` chain. */
export function errorToWire(error: unknown, maxCauses: number = MAX_WIRE_CAUSES): WireError {
  if (!(error instanceof Error)) return { name: 'Error', message: describeThrown(error) };
  const wire: WireError = { name: String(error.name), message: String(error.message) };
  if (typeof error.stack === 'string') wire.stack = error.stack;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') wire.code = code;
  if (error instanceof TensorbusError) wire.retryable = error.retryable;
  if (error instanceof RemoteError) {
    wire.worker = error.worker;
    wire.remoteName = error.remoteName;
    wire.remoteMessage = error.remoteMessage;
    if (error.remoteStack !== undefined) wire.remoteStack = error.remoteStack;
    if (error.remoteCode !== undefined) wire.remoteCode = error.remoteCode;
  }
  if (error.cause instanceof Error && maxCauses > 0) wire.cause = errorToWire(error.cause, maxCauses - 1);
  return wire;
}

function describeThrown(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

type Rebuilder = (message: string, options: TensorbusErrorOptions) => TensorbusError;

// A Map, not an object: a code like 'constructor' from the wire must not find Object.prototype's.
const rebuilders = new Map<string, Rebuilder>([
  ['RPC_TIMEOUT', (m, o) => new RpcTimeoutError(m, o)],
  ['WORKER_UNAVAILABLE', (m, o) => new WorkerUnavailableError(m, o)],
  ['UNKNOWN_FUNCTION', (m, o) => new UnknownFunctionError(m, o)],
  ['SERIALIZATION', (m, o) => new SerializationError(m, o)],
  ['SHUTDOWN', (m, o) => new ShutdownError(m, o)],
  ['INVALID_ARGUMENT', (m, o) => new InvalidArgumentError(m, o)],
  ['DUPLICATE_WORKER', (m, o) => new DuplicateWorkerError(m, o)],
  ['PERMISSION_DENIED', (m, o) => new PermissionDeniedError(m, o)],
  ['MISSING_PACKAGE', (m, o) => new MissingPackageError(m, o)],
  ['TRANSPORT', (m, o) => new TransportError(m, o)],
  ['CHECKPOINT_INVALID', (m, o) => new CheckpointError(m, o)],
  ['REENTRANT_CALL', (m, o) => new ReentrantCallError(m, o)],
]);
for (const code of ['RREF_NOT_OWNER', 'RREF_RELEASED', 'RREF_CREATION_FAILED', 'RREF_OWNER_LOST', 'RREF_LIMIT_EXCEEDED'] satisfies RRefErrorCode[]) {
  rebuilders.set(code, (m, o) => new RRefError(code, m, o));
}
for (const code of ['STREAM_LIMIT_EXCEEDED', 'STREAM_LEASE_EXPIRED'] satisfies StreamErrorCode[]) {
  rebuilders.set(code, (m, o) => new StreamError(code, m, o));
}
for (const code of ['AUTOGRAD_CONTEXT_NOT_FOUND', 'AUTOGRAD_BACKWARD_FAILED', 'AUTOGRAD_LIMIT_EXCEEDED'] satisfies AutogradErrorCode[]) {
  rebuilders.set(code, (m, o) => new AutogradError(code, m, o));
}

/** JavaScript's own error classes, rebuilt by name. */
const builtins = new Map<string, ErrorConstructor>([
  ['Error', Error],
  ['TypeError', TypeError],
  ['RangeError', RangeError],
  ['SyntaxError', SyntaxError],
  ['ReferenceError', ReferenceError],
  ['EvalError', EvalError],
  ['URIError', URIError],
]);

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * Rebuilds an error from its wire shape: tensorbus errors as their own class
 * with their code and `retryable`, a `RemoteError` with its worker and remote
 * fields, JavaScript's error classes by name, and any other error as an
 * `Error` with the original name and code. The stack and `cause` chain are
 * kept. Fields of the wrong type (from a foreign sender) are ignored.
 */
export function errorFromWire(wire: WireError, maxCauses: number = MAX_WIRE_CAUSES): Error {
  const w = (wire !== null && typeof wire === 'object' ? wire : {}) as unknown as Record<string, unknown>;
  const message = str(w.message) ?? '';
  const name = str(w.name) ?? 'Error';
  const code = str(w.code);
  const options: TensorbusErrorOptions = {};
  if (typeof w.retryable === 'boolean') options.retryable = w.retryable;
  if (w.cause !== null && typeof w.cause === 'object' && maxCauses > 0) options.cause = errorFromWire(w.cause as WireError, maxCauses - 1);

  let error: Error;
  const worker = str(w.worker);
  const rebuild = code === undefined ? undefined : rebuilders.get(code);
  if (code === 'REMOTE_ERROR' && worker !== undefined) {
    error = new RemoteError(
      {
        worker,
        remoteName: str(w.remoteName) ?? 'Error',
        remoteMessage: str(w.remoteMessage) ?? message,
        remoteStack: str(w.remoteStack),
        remoteCode: str(w.remoteCode),
      },
      options,
    );
  } else if (rebuild) {
    error = rebuild(message, options);
  } else {
    const Builtin = builtins.get(name) ?? Error;
    error = options.cause === undefined ? new Builtin(message) : new Builtin(message, { cause: options.cause });
    if (error.name !== name) error.name = name;
    if (code !== undefined) (error as { code?: string }).code = code;
  }
  const stack = str(w.stack);
  if (stack !== undefined) error.stack = stack;
  return error;
}

/**
 * Wraps what a remote function threw as a {@link RemoteError} raised by
 * `worker`. Tensorbus errors with their own meaning (an unknown function, an
 * autograd failure) keep their class so callers can check their codes.
 */
export function remoteErrorFrom(worker: string, error: unknown): WireError {
  if (error instanceof TensorbusError) return errorToWire(error);
  const original = errorToWire(error);
  const wire: WireError = {
    name: 'RemoteError',
    message: `worker '${worker}' raised ${original.name}: ${original.message}`,
    code: 'REMOTE_ERROR',
    retryable: false,
    worker,
    remoteName: original.name,
    remoteMessage: original.message,
  };
  if (original.stack !== undefined) wire.remoteStack = original.stack;
  if (original.code !== undefined) wire.remoteCode = original.code;
  if (original.cause !== undefined) wire.cause = original.cause;
  return wire;
}
