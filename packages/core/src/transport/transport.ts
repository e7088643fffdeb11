/**
 * The interface every transport implements. Subjects are dot-separated tokens
 * as in NATS (`a.b.c`, wildcards `*` and `>` in subscriptions).
 *
 * The base {@link Transport} is what every protocol needs and every
 * transport has, eight members: `kind`, `maxPayload`, `status$` (a
 * connection status stream), `request` (request/reply with timeout and
 * abort), `publish`, `subscribe`, `flush` and `close`. What only some
 * transports have is a capability of its own in capabilities.ts, which a
 * protocol asks for with a type guard: frames moved piece by piece
 * (`SinkCapable`: deferred bytes, reply and request sinks, direct routes, a
 * canceller), route reports (`RouteReporting`), beacon threads
 * (`BeaconCapable`).
 *
 * A transport decodes no tensors, but it knows the shapes their bytes travel
 * in: a payload is plain bytes, a {@link Frame} (shared, pooled memory the
 * sender keeps its share of) or {@link DeferredBytes} (a frame whose tensor
 * bytes are read out of tensor memory only as they are sent, by a
 * sink-capable transport; any other reads them whole first, with
 * {@link payloadBytes}); a sink-capable transport may write a reply piece by
 * piece into a {@link FrameSink} (the codec's streaming decoder, straight
 * into tensor memory); and a failed request says why on its error
 * ({@link RequestFailure}).
 *
 * `localTransport()` (in-process) and `natsTransport()` (NATS) implement it,
 * and one conformance suite tests both.
 * @module
 */
import type { Observable } from 'rxjs';
import { Owned } from '../owned.js';
import { Frame } from '../owned-frame.js';

/** Connection state of a transport. */
export type TransportStatus = 'connected' | 'reconnecting' | 'disconnected' | 'closed';

/**
 * Bytes produced as they are read: a frame whose tensor data is copied out of
 * tensor memory only as it is sent (see codec/outgoing-frame.ts). Its maker
 * owns it; a transport that reads it after `request`/`respond` returned holds
 * it for as long as it does.
 */
export interface DeferredBytes {
  readonly byteLength: number;
  /** Copies bytes `[position, position + target.byteLength)` into `target`. */
  read(position: number, target: Uint8Array): void;
  /** All of it in a buffer of its own, owned by the caller (for paths that need it whole). */
  toBytes(): Uint8Array;
  /** All of it in a frame of its own (pooled memory when large), owned by the caller; {@link toBytes} when absent. */
  toFrame?(): Frame;
  /** Keeps it readable until the returned function is called (once). */
  hold(): () => void;
  /**
   * All of it as views of where its bytes lie, in order (header, tensor
   * memory, padding), for a writer that hands them to the kernel at once.
   * The views themselves may be detached by the next tensor call (a heap
   * that grows), so hand them over before any other code runs; the memory
   * under them stays allocated to these bytes while they are held, and
   * whether it also stays where it is when the heap grows is the runtime's
   * choice (see the NATS transport's `direct/heap-writes.ts`). Undefined
   * where views would not pay: read the bytes piece by piece instead.
   */
  views?(): Uint8Array[] | undefined;
}

/**
 * What a transport sends: plain bytes (its own from then on, left to the
 * garbage collector), a {@link Frame} (the sender keeps its share and
 * releases it when it likes: the transport takes shares of its own for as
 * long as it reads the bytes), or bytes read as they are sent.
 */
export type Payload = Uint8Array | Frame | DeferredBytes;

/**
 * The bytes of `payload`, whole (deferred bytes are read into a buffer of
 * their own). A frame's bytes are valid while its share is held.
 */
export function payloadBytes(payload: Payload): Uint8Array {
  if (payload instanceof Uint8Array) return payload;
  return payload instanceof Frame ? payload.bytes : payload.toBytes();
}

/**
 * A new share of `payload`'s bytes, whole, owned by the caller: another share
 * of a frame, plain bytes as a frame, deferred bytes read into a frame of
 * their own. Take it while the payload is held.
 */
export function payloadFrame(payload: Payload): Frame {
  if (payload instanceof Uint8Array) return Frame.of(payload);
  if (payload instanceof Frame) return payload.retain();
  return payload.toFrame?.() ?? Frame.of(payload.toBytes());
}

/** Frames, or deferred bytes: what a transport keeps of a payload while it sends it. */
export type HeldPayload = Frame | DeferredBytes;

/**
 * A transport's own hold on `payload` while it is being sent, taken when
 * `request`/`respond` is called (while its maker surely holds it):
 * `data` stays readable until `release()` (idempotent).
 */
export function holdPayload(payload: Payload): { data: HeldPayload; release(): void } {
  if (payload instanceof Uint8Array) return { data: Frame.of(payload), release: () => undefined };
  if (payload instanceof Frame) {
    const share = payload.retain();
    return { data: share, release: () => share.release() };
  }
  const held = Owned.own(payload, payload.hold());
  return { data: payload, release: () => held.release() };
}

/** Writes all of `bytes` into `sink`, piece by piece; a failure to read fails the sink too. */
export function writeInto(sink: FrameSink, bytes: DeferredBytes): void {
  try {
    for (let at = 0; at < bytes.byteLength; ) {
      const target = sink.target();
      const n = Math.min(target.byteLength, bytes.byteLength - at);
      bytes.read(at, target.subarray(0, n));
      sink.advance(n);
      at += n;
    }
  } catch (error) {
    sink.fail();
    throw error;
  }
}

/**
 * Where the bytes of a received reply go, piece by piece: the codec's
 * streaming decoder puts tensor bytes straight into tensor memory.
 */
export interface FrameSink {
  /** Memory for the next bytes, never empty while some remain; valid only until other code runs. */
  target(): Uint8Array;
  /** `n` bytes were written at the start of the last target. */
  advance(n: number): void;
  /** No more bytes will come (the connection failed): let go of everything. */
  fail(): void;
  /**
   * Takes the whole reply at once from deferred bytes made in this process
   * (an in-process transport), sharing its tensors' memory instead of copying
   * it; false when it cannot, and the bytes must be written as usual.
   */
  adopt?(bytes: DeferredBytes): boolean;
}

export { RequestFailure, type RequestFailureReason } from './request-failure.js';

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
  /**
   * The message's bytes: a share the handler owns. Release it when done, or
   * hand it to `codec.decode`, which takes it (pooled memory goes back then).
   */
  readonly data: Frame;
  /** Set when the sender waits for an answer. */
  readonly reply?: string;
  /**
   * Where the message came from, as far as the transport can vouch for it
   * (never the sender's own claim): `account:<name>` for a request that
   * reached this account through another NATS account's service import
   * (nats-server names the importing account). Undefined when the transport
   * vouches for nothing beyond "from this worker's own account or process".
   */
  readonly origin?: string;
  /**
   * The message as its sender made it, when that was deferred bytes of this
   * same process (the in-process transport): decode it with
   * `codec.decodePayload` to share its tensors instead of copying them. `data`
   * then reads it whole on first use (a frame of its own, the handler's).
   */
  readonly payload?: DeferredBytes;
  /**
   * The sink the subscription's `requestSink` gave for this message, when
   * the transport wrote the bytes there as they arrived (`data` is then
   * empty): the handler takes the message from it, or abandons it.
   */
  readonly sink?: FrameSink;
  /**
   * Sends `data` to the reply subject; false when there is none or it failed.
   * A frame stays the caller's share (the transport takes its own).
   */
  respond(data: Payload): boolean;
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
}

/** A live subscription. */
export interface TransportSubscription {
  unsubscribe(): void;
}

/** How a request travels (see `RouteReporting.routeOf` in capabilities.ts). */
export type TransportRoute = 'in-process' | 'shm' | 'tcp' | 'nats';

/**
 * Moves bytes between workers: what every transport has and every protocol
 * may rely on. What only some have (deferred bytes and sinks, route reports,
 * beacons) is a capability of its own, asked for with its type guard
 * (`hasSinks`, `reportsRoutes`, `hasBeacon`: see capabilities.ts); a
 * protocol works without any of them.
 */
export interface Transport {
  /** `'local'`, `'nats'`, … for logs and diagnostics. */
  readonly kind: string;
  /** Largest single payload accepted by `request`/`publish`/`respond`. */
  readonly maxPayload: number;
  /** Current status, then every change. */
  readonly status$: Observable<TransportStatus>;
  /**
   * Sends `data` to `subject` and resolves with the first reply, a frame the
   * caller owns (release it, or hand it to `codec.decode`). A frame sent stays
   * the caller's share: the transport takes its own for as long as it reads it.
   * Rejects with `WorkerUnavailableError` whose `reason` is
   * {@link RequestFailure}`.NoResponders` when nobody listens on `subject`, or
   * `.ResponderLost` when the responder's end went away with the request in
   * flight (where the transport can see it: the in-process bus, the NATS
   * transport's direct and shared-memory routes); `RpcTimeoutError` on
   * timeout, an `AbortError` when aborted, `ShutdownError` after close,
   * `TransportError` when the transfer itself failed.
   */
  request(subject: string, data: Payload, options?: RequestOptions): Promise<Frame>;
  /** Fire-and-forget delivery to every subscriber of `subject` (a frame stays the caller's share). */
  publish(subject: string, data: Uint8Array | Frame): void;
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
