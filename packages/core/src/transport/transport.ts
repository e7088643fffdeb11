/**
 * The interface every transport implements. Subjects are dot-separated tokens
 * as in NATS (`a.b.c`, wildcards `*` and `>` in subscriptions).
 *
 * A transport is ten members ({@link Transport}): `kind`, `maxPayload`,
 * `status$` (a connection status stream), `request` (request/reply with
 * timeout and abort), `publish`, `subscribe`, `flush` and `close`, and two
 * optional ones, `takesDeferredBytes` and `startBeacon`. It decodes no
 * tensors, but it knows the shapes their bytes travel in: a payload is plain
 * bytes, a {@link Frame} (shared, pooled memory the sender keeps its share of)
 * or {@link DeferredBytes} (a frame whose tensor bytes are read out of tensor
 * memory only as they are sent, for transports that set
 * `takesDeferredBytes`); a reply may be written piece by piece into a
 * {@link FrameSink} (the codec's streaming decoder, straight into tensor
 * memory); and a failed request says why on its error
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
  /**
   * Random access, for a transport that receives one frame over several
   * connections at once: memory for the bytes from `offset` on (up to a
   * boundary of the sink's, never past the frame's end), or undefined while
   * the sink cannot place them yet. The frame's first bytes (its head) come
   * through {@link target} in order; once they are in, every later offset
   * can be placed. Valid only until other code runs, as {@link target}.
   */
  targetAt?(offset: number): Uint8Array | undefined;
  /** `n` bytes were written at `offset`, into memory {@link targetAt} gave. Each byte of the frame comes once, by either way. */
  advanceAt?(offset: number, n: number): void;
}

export { RequestFailure, type RequestFailureReason } from './request-failure.js';

/** Options of {@link Transport.request}. */
export interface RequestOptions {
  /** Reject with `RpcTimeoutError` after this many ms; 0 or undefined = never. */
  timeoutMs?: number;
  /** Aborting rejects the request with an `AbortError`-named error. */
  signal?: AbortSignal;
  /**
   * Offered a reply's size before its bytes, by a transport that receives it
   * piece by piece; a sink returned takes the bytes, and `request` then
   * resolves with an empty frame. Return undefined to get the bytes as usual.
   */
  replySink?: (byteLength: number) => FrameSink | undefined;
  /**
   * Handed, during the call to `request`, a function that ends the request at
   * once with `reason`: the promise rejects with it and the request lets go of
   * what it holds, as on abort. Calling it once the request is over does
   * nothing. Costs nothing per request, unlike an `AbortSignal` (whose
   * controller and listener cost ~10 µs): for callers that end many requests
   * at once (those to a worker that left). A transport that does not call it
   * leaves the caller to stop waiting on its own.
   */
  canceller?: (cancel: (reason: Error) => void) => void;
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
  /**
   * This subscriber alone serves `subject` (a worker's own call subject): a
   * transport may then let requesters reach it on a direct path beside the
   * bus (the NATS transport's direct routes). Never with `queue`.
   */
  exclusive?: boolean;
  /**
   * Offered a request's size before its bytes, by a transport that receives
   * it piece by piece (the NATS transport's direct routes); a sink returned
   * takes the bytes, and the message then comes with it as `sink` and an
   * empty `data`. A message cut off on the way never comes: its sink is
   * told `fail`. Return undefined to get the bytes as usual.
   */
  requestSink?: (byteLength: number) => FrameSink | undefined;
}

/** A live subscription. */
export interface TransportSubscription {
  unsubscribe(): void;
}

/**
 * What a beacon publishes: one message every `intervalMs`, made anew each time
 * by a function that runs on a thread of its own (see
 * {@link Transport.startBeacon}). Everything here crosses to that thread by
 * structured clone, so it holds data only: the function is named by the
 * module that exports it.
 */
export interface BeaconSpec {
  /** Where the messages go (without the namespace, as for `publish`). */
  subject: string;
  /** How often, ms (a transport may hold to a floor: the NATS beacon's is 10). */
  intervalMs: number;
  /**
   * URL (`import.meta.url`-relative, as a string) of a module whose export
   * `beat(data, shared)` returns the bytes of one message, or undefined to
   * skip this beat. It runs on the beacon thread: it must load quickly and
   * touch no tensors.
   */
  builder: string;
  /** Handed to `beat` on every beat (structured-cloneable: plain data, `KeyObject`s). */
  data: unknown;
  /**
   * Memory shared with the caller (on a `SharedArrayBuffer`): both threads
   * read and write it with `Atomics`, so `beat` sees what the caller changes
   * at once, even while the caller's own thread computes.
   */
  shared: Int32Array;
}

/** A message published from a beacon thread; remove it to stop. */
export interface BeaconSlot {
  /**
   * Resolves true once the thread publishes this slot's messages (its first
   * an interval later), false when it cannot (no connection, the builder
   * would not load, the thread failed): the caller then does without.
   */
  readonly ready: Promise<boolean>;
  /** Stops this beacon's messages (the thread ends with its last slot). */
  remove(): void;
}

/** Moves bytes between workers. */
/** How a request travels (see {@link Transport.routeOf}). */
export type TransportRoute = 'in-process' | 'shm' | 'tcp' | 'nats';

export interface Transport {
  /** `'local'`, `'nats'`, … for logs and diagnostics. */
  readonly kind: string;
  /** Largest single payload accepted by `request`/`publish`/`respond`. */
  readonly maxPayload: number;
  /**
   * True when `request` and `respond` take {@link DeferredBytes} (large
   * frames read as they are sent); other transports are given whole bytes.
   */
  readonly takesDeferredBytes?: boolean;
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
  /**
   * Optional. Publishes `spec`'s messages from a thread of its own, with a bus
   * connection of its own, so they go on while this thread computes
   * (membership heartbeats: busy is not dead). Undefined when this transport
   * has no use for one (in one process, a busy worker is the caller's own
   * thread) or cannot start one here; the caller then does without.
   */
  startBeacon?(spec: BeaconSpec): BeaconSlot | undefined;
  /**
   * Optional. The route a request to `subject` would take now, for traces
   * and the stats query: `'in-process'`, `'shm'` (shared memory), `'tcp'`
   * (the direct data plane) or `'nats'`. Never throws.
   */
  routeOf?(subject: string): TransportRoute;
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
