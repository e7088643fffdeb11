/**
 * The narrow interface every transport implements: request/reply with timeout
 * and abort, publish, subscribe, a connection status stream, and close.
 * Subjects are dot-separated tokens as in NATS (`a.b.c`, wildcards `*` and `>`
 * in subscriptions). A transport carries bytes; it knows nothing of tensors.
 *
 * A new transport is these six members; `localTransport()` (in-process) and
 * `natsTransport()` (NATS) implement it, and one conformance suite tests both.
 * @module
 */
import type { Observable } from 'rxjs';

/** Connection state of a transport. */
export type TransportStatus = 'connected' | 'reconnecting' | 'disconnected' | 'closed';

/** Options of {@link Transport.request}. */
export interface RequestOptions {
  /** Reject with `RpcTimeoutError` after this many ms; 0 or undefined = never. */
  timeoutMs?: number;
  /** Aborting rejects the request with an `AbortError`-named error. */
  signal?: AbortSignal;
}

/** A message delivered to a subscription. */
export interface InboundMessage {
  readonly subject: string;
  readonly data: Uint8Array;
  /** Set when the sender waits for an answer. */
  readonly reply?: string;
  /** Sends `data` to the reply subject; false when there is none or it failed. */
  respond(data: Uint8Array): boolean;
}

/** Options of {@link Transport.subscribe}. */
export interface SubscribeOptions {
  /** Members of one queue group share the messages, each delivered to one. */
  queue?: string;
  /**
   * Told of what this subscription could not deliver: the bus refused the
   * subject (`PermissionDeniedError`), a chunked message failed
   * (`TransportError`).
   */
  onError?: (error: Error) => void;
  /**
   * This subscriber alone serves `subject` (a worker's own call subject): a
   * transport may then let requesters reach it on a direct path beside the
   * bus (the NATS transport's direct routes). Never with `queue`.
   */
  exclusive?: boolean;
}

/** A live subscription. */
export interface TransportSubscription {
  unsubscribe(): void;
}

/** Moves bytes between workers. */
export interface Transport {
  /** `'local'`, `'nats'`, … for logs and diagnostics. */
  readonly kind: string;
  /** Largest single payload accepted by `request`/`publish`/`respond`. */
  readonly maxPayload: number;
  /** Current status, then every change. */
  readonly status$: Observable<TransportStatus>;
  /**
   * Sends `data` to `subject` and resolves with the first reply.
   * Rejects with `WorkerUnavailableError` when nobody listens on `subject`,
   * `RpcTimeoutError` on timeout, an `AbortError` when aborted, `ShutdownError`
   * after close.
   */
  request(subject: string, data: Uint8Array, options?: RequestOptions): Promise<Uint8Array>;
  /** Fire-and-forget delivery to every subscriber of `subject`. */
  publish(subject: string, data: Uint8Array): void;
  /** Calls `handler` for every message on `subject` (wildcards allowed). */
  subscribe(subject: string, handler: (message: InboundMessage) => void, options?: SubscribeOptions): TransportSubscription;
  /** Resolves once everything published so far has been handed to the bus. */
  flush(): Promise<void>;
  /** Closes the transport; pending requests reject with `ShutdownError`. */
  close(): Promise<void>;
}

/**
 * Builds the error an aborted operation rejects with: an `Error` named
 * `AbortError` (the signal's `DOMException` is not an `Error` to every tool),
 * carrying the signal's reason as `cause`.
 */
export function abortError(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  if (reason instanceof Error && reason.name === 'AbortError' && !(reason instanceof DOMException)) return reason;
  const custom = reason instanceof Error && reason.name !== 'AbortError';
  const error = new Error(custom ? `aborted: ${reason.message}` : 'the operation was aborted', { cause: reason });
  error.name = 'AbortError';
  return error;
}

/** True when `pattern` (with `*` and `>` wildcards) matches `subject`. */
export function subjectMatches(pattern: string, subject: string): boolean {
  if (pattern === subject) return true;
  const p = pattern.split('.');
  const s = subject.split('.');
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return s.length > i;
    if (i >= s.length) return false;
    if (p[i] !== '*' && p[i] !== s[i]) return false;
  }
  return p.length === s.length;
}
