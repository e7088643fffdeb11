/**
 * Typed errors of tensorbus. Every error the packages raise is a
 * {@link TensorbusError} with a stable string `code` and a `retryable` flag, and
 * is rebuilt from the wire in one place ({@link errorFromWire}).
 *
 * @example
 * ```ts
 * try { await agent.rpcSync('w1', fn, []); }
 * catch (e) { if (e instanceof TensorbusError && e.code === 'RPC_TIMEOUT') retry(); }
 * ```
 * @module
 */
import type { RequestFailureReason } from './transport/request-failure.js';

/**
 * Codes that a package built on core adds to {@link ErrorCode}, each a key of
 * this interface, declared where that package defines its error class
 * (TypeScript's declaration merging), e.g.
 * `declare module '@tensorbus/core' { interface ExtensionErrorCodes { MY_CODE: true } }`.
 * Core knows none of them: such an error crosses the wire as a plain `Error`
 * with its name and code ({@link errorFromWire}).
 */
export interface ExtensionErrorCodes {}

/** Stable error codes, one per failure kind: core's, and those packages add ({@link ExtensionErrorCodes}). */
export type ErrorCode = CoreErrorCode | keyof ExtensionErrorCodes;

/** Core's error codes. */
export type CoreErrorCode =
  | 'RPC_TIMEOUT'
  | 'REMOTE_ERROR'
  | 'WORKER_UNAVAILABLE'
  | 'UNKNOWN_FUNCTION'
  | 'SERIALIZATION'
  | 'SHUTDOWN'
  | 'RREF_NOT_OWNER'
  | 'RREF_RELEASED'
  | 'RREF_CREATION_FAILED'
  | 'RREF_OWNER_LOST'
  | 'AUTOGRAD_CONTEXT_NOT_FOUND'
  | 'AUTOGRAD_BACKWARD_FAILED'
  | 'RREF_LIMIT_EXCEEDED'
  | 'AUTOGRAD_LIMIT_EXCEEDED'
  | StreamErrorCode
  | 'INVALID_ARGUMENT'
  | 'DUPLICATE_WORKER'
  | 'PERMISSION_DENIED'
  | 'MISSING_PACKAGE'
  | 'TRANSPORT'
  | 'CHECKPOINT_INVALID'
  | 'REENTRANT_CALL';

/** Options common to every tensorbus error. */
export interface TensorbusErrorOptions {
  cause?: unknown;
  retryable?: boolean;
}

/** Base class of every error tensorbus raises. */
export class TensorbusError extends Error {
  /** Stable machine-readable code. */
  readonly code: ErrorCode;
  /** Whether retrying the same operation may succeed. */
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options: TensorbusErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

/** No answer arrived within the timeout. Retryable. */
export class RpcTimeoutError extends TensorbusError {
  constructor(message: string, options: TensorbusErrorOptions = {}) {
    super('RPC_TIMEOUT', message, { retryable: true, ...options });
  }
}

/** Fields describing an error raised by a remote function. */
export interface RemoteErrorInfo {
  /** The worker whose function threw. */
  worker: string;
  /** The original error's `name`. */
  remoteName: string;
  /** The original error's `message`. */
  remoteMessage: string;
  /** The original error's stack, as printed on the remote worker. */
  remoteStack?: string;
  /** The original error's `code`, when it had one. */
  remoteCode?: string;
}

/** The remote function threw; carries the original error's name, message and stack. */
export class RemoteError extends TensorbusError {
  readonly worker: string;
  readonly remoteName: string;
  readonly remoteMessage: string;
  readonly remoteStack: string | undefined;
  readonly remoteCode: string | undefined;

  constructor(info: RemoteErrorInfo, options: TensorbusErrorOptions = {}) {
    super(
      'REMOTE_ERROR',
      `worker '${info.worker}' raised ${info.remoteName}: ${info.remoteMessage}`,
      options,
    );
    this.worker = info.worker;
    this.remoteName = info.remoteName;
    this.remoteMessage = info.remoteMessage;
    this.remoteStack = info.remoteStack;
    this.remoteCode = info.remoteCode;
  }
}

/** Options of {@link WorkerUnavailableError}. */
export interface WorkerUnavailableErrorOptions extends TensorbusErrorOptions {
  /** Why, when a transport knows it (see `RequestFailure` in transport/request-failure.ts). */
  reason?: RequestFailureReason;
}

/**
 * The destination is unknown, departed or dead. A transport that raises it
 * says why in {@link WorkerUnavailableError.reason}: decide by that, never by
 * the message text.
 */
export class WorkerUnavailableError extends TensorbusError {
  /** Why a transport request failed (`'no-responders'`, `'responder-lost'`); undefined when not told. */
  readonly reason: RequestFailureReason | undefined;
  constructor(message: string, options: WorkerUnavailableErrorOptions = {}) {
    const { reason, ...rest } = options;
    super('WORKER_UNAVAILABLE', message, rest);
    this.reason = reason;
  }
}

/** The callee has no such function or method. */
export class UnknownFunctionError extends TensorbusError {
  constructor(message: string, options: TensorbusErrorOptions = {}) {
    super('UNKNOWN_FUNCTION', message, options);
  }
}

/** A value cannot be encoded, or bytes cannot be decoded. */
export class SerializationError extends TensorbusError {
  constructor(message: string, options: TensorbusErrorOptions = {}) {
    super('SERIALIZATION', message, options);
  }
}

/** The agent (or transport) is not running. */
export class ShutdownError extends TensorbusError {
  constructor(message = 'the RPC agent is not running: call initRpc() first', options: TensorbusErrorOptions = {}) {
    super('SHUTDOWN', message, options);
  }
}

/** Codes of {@link RRefError}. */
/** `RREF_LIMIT_EXCEEDED`: a peer reached its bound of references or tensor bytes on a worker. */
export type RRefErrorCode = 'RREF_NOT_OWNER' | 'RREF_RELEASED' | 'RREF_CREATION_FAILED' | 'RREF_OWNER_LOST' | 'RREF_LIMIT_EXCEEDED';

/** A remote reference cannot be used as asked. */
export class RRefError extends TensorbusError {
  declare readonly code: RRefErrorCode;
  constructor(code: RRefErrorCode, message: string, options: TensorbusErrorOptions = {}) {
    super(code, message, options);
  }
}

/** Codes of {@link AutogradError}. */
/** `AUTOGRAD_LIMIT_EXCEEDED`: a peer reached its bound of contexts or received tensor bytes on a worker. */
export type AutogradErrorCode = 'AUTOGRAD_CONTEXT_NOT_FOUND' | 'AUTOGRAD_BACKWARD_FAILED' | 'AUTOGRAD_LIMIT_EXCEEDED';

/** Distributed autograd failed. */
export class AutogradError extends TensorbusError {
  declare readonly code: AutogradErrorCode;
  constructor(code: AutogradErrorCode, message: string, options: TensorbusErrorOptions = {}) {
    super(code, message, options);
  }
}

/**
 * Codes of {@link StreamError}. `STREAM_LIMIT_EXCEEDED`: a peer reached its
 * bound of open streams on a worker (`peerLimits.streamsPerPeer`);
 * `STREAM_LEASE_EXPIRED`: a consumer that is not a member returned no credit
 * within `peerLimits.leaseMs`, and the producer stopped.
 */
export type StreamErrorCode = 'STREAM_LIMIT_EXCEEDED' | 'STREAM_LEASE_EXPIRED';

/** A stream was refused, or its producer stopped, because of a bound on what a peer may hold on a worker. */
export class StreamError extends TensorbusError {
  declare readonly code: StreamErrorCode;
  constructor(code: StreamErrorCode, message: string, options: TensorbusErrorOptions = {}) {
    super(code, message, options);
  }
}

/** A bad argument to a public function. */
export class InvalidArgumentError extends TensorbusError {
  constructor(message: string, options: TensorbusErrorOptions = {}) {
    super('INVALID_ARGUMENT', message, options);
  }
}

/** The worker name is already taken in this namespace. */
export class DuplicateWorkerError extends TensorbusError {
  constructor(message: string, options: TensorbusErrorOptions = {}) {
    super('DUPLICATE_WORKER', message, options);
  }
}

/** The bus refused a subject (or a connection) to this identity. */
export class PermissionDeniedError extends TensorbusError {
  constructor(message: string, options: TensorbusErrorOptions = {}) {
    super('PERMISSION_DENIED', message, options);
  }
}

/**
 * An optional package that a choice needs is not installed (e.g. `NATS_URL`
 * is set but `@tensorbus/nats-transport` is missing). Not retryable: install
 * the package named in the message, or choose otherwise.
 */
export class MissingPackageError extends TensorbusError {
  /** The package that could not be found (undefined on an error rebuilt from the wire). */
  readonly packageName: string | undefined;
  constructor(message: string, options: TensorbusErrorOptions & { packageName?: string } = {}) {
    super('MISSING_PACKAGE', message, options);
    this.packageName = options.packageName;
  }
}

/** The transport failed (connection lost, chunked transfer broken). Retryable. */
export class TransportError extends TensorbusError {
  constructor(message: string, options: TensorbusErrorOptions = {}) {
    super('TRANSPORT', message, { retryable: true, ...options });
  }
}

/**
 * A checkpoint was refused as it was read: truncated or corrupt, not of the
 * shape or dtype the reader expects, or not signed by the reader's account.
 * Not retryable: the reader starts fresh (and says so) or writes a new one.
 */
export class CheckpointError extends TensorbusError {
  constructor(message: string, options: TensorbusErrorOptions = {}) {
    super('CHECKPOINT_INVALID', message, options);
  }
}

/**
 * A call into a worker that serves its calls one at a time (a browser tab)
 * came back to it from the call it is serving: the tab called a worker which
 * called the tab before answering. Served, it would wait for the call it
 * waits on; it is refused at once instead. Not retryable: the same chain of
 * calls meets the same refusal (docs/browser.md).
 */
export class ReentrantCallError extends TensorbusError {
  constructor(message: string, options: TensorbusErrorOptions = {}) {
    super('REENTRANT_CALL', message, options);
  }
}
