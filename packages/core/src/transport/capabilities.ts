/**
 * What only some transports have, each a small interface of its own beside
 * the base {@link Transport}, with the type guard a protocol asks with before
 * it uses it. A protocol works on the base alone; a capability makes it
 * faster or cheaper, never different in what it delivers.
 *
 * - {@link SinkCapable} (`hasSinks`): moves frames piece by piece: reads
 *   {@link DeferredBytes} as it sends them, writes a received request or
 *   reply into a {@link FrameSink} as its bytes arrive, may serve a subject
 *   its one subscriber holds alone on a direct route (`exclusive`), and ends
 *   many requests at once through a `canceller`. The in-process and NATS
 *   transports.
 * - {@link RouteReporting} (`reportsRoutes`): says which route a request to
 *   a subject would take now (traces, the stats query). Both of them.
 * - {@link BeaconCapable} (`hasBeacon`): publishes a message from a thread
 *   of its own (membership heartbeats). The NATS transport on Node.
 * - {@link RandomAccessSink} (`isRandomAccess`): a sink that also takes
 *   bytes at any offset, for a transport that receives one frame over several
 *   connections at once. The codec's streaming decoder.
 * @module
 */
import type { Frame } from '../owned-frame.js';
import type {
  FrameSink,
  InboundMessage,
  Payload,
  RequestOptions,
  SubscribeOptions,
  Transport,
  TransportRoute,
  TransportSubscription,
} from './transport.js';

/** Options of {@link SinkCapable.request}: the base ones and what a sink-capable transport takes besides. */
export interface SinkRequestOptions extends RequestOptions {
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

/** Options of {@link SinkCapable.subscribe}: the base ones and what a sink-capable transport takes besides. */
export interface SinkSubscribeOptions extends SubscribeOptions {
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

/** A transport that moves frames piece by piece (see the module's note). */
export interface SinkCapable extends Transport {
  /** `request` and `respond` read {@link DeferredBytes} as they send them (other transports read them whole first). */
  readonly takesDeferredBytes: true;
  /** {@link Transport.request}, with a reply sink and a canceller. */
  request(subject: string, data: Payload, options?: SinkRequestOptions): Promise<Frame>;
  /** {@link Transport.subscribe}, with `exclusive` and a request sink. */
  subscribe(subject: string, handler: (message: InboundMessage) => void, options?: SinkSubscribeOptions): TransportSubscription;
}

/** True when `transport` moves frames piece by piece: take deferred bytes, sinks and a canceller. */
export function hasSinks(transport: Transport): transport is SinkCapable {
  return (transport as Partial<SinkCapable>).takesDeferredBytes === true;
}

/** A transport that says which route a request would take. */
export interface RouteReporting extends Transport {
  /**
   * The route a request to `subject` would take now, for traces and the
   * stats query: `'in-process'`, `'shm'` (shared memory), `'tcp'` (the direct
   * data plane) or `'nats'`. Never throws.
   */
  routeOf(subject: string): TransportRoute;
}

/** True when `transport` reports routes. */
export function reportsRoutes(transport: Transport): transport is RouteReporting {
  return typeof (transport as Partial<RouteReporting>).routeOf === 'function';
}

/**
 * What a beacon publishes: one message every `intervalMs`, made anew each time
 * by a function that runs on a thread of its own (see
 * {@link BeaconCapable.startBeacon}). Everything here crosses to that thread by
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

/** A transport that can publish from a thread of its own. */
export interface BeaconCapable extends Transport {
  /**
   * Publishes `spec`'s messages from a thread of its own, with a bus
   * connection of its own, so they go on while this thread computes
   * (membership heartbeats: busy is not dead). Undefined when it cannot start
   * one here; the caller then does without.
   */
  startBeacon(spec: BeaconSpec): BeaconSlot | undefined;
}

/** True when `transport` can start beacons (it may still refuse one: see {@link BeaconCapable.startBeacon}). */
export function hasBeacon(transport: Transport): transport is BeaconCapable {
  return typeof (transport as Partial<BeaconCapable>).startBeacon === 'function';
}

/**
 * A {@link FrameSink} that also takes bytes at any offset, for a transport
 * that receives one frame over several connections at once.
 */
export interface RandomAccessSink extends FrameSink {
  /**
   * Memory for the bytes from `offset` on (up to a boundary of the sink's,
   * never past the frame's end), or undefined while the sink cannot place
   * them yet. The frame's first bytes (its head) come through `target` in
   * order; once they are in, every later offset can be placed. Valid only
   * until other code runs, as `target`.
   */
  targetAt(offset: number): Uint8Array | undefined;
  /** `n` bytes were written at `offset`, into memory {@link targetAt} gave. Each byte of the frame comes once, by either way. */
  advanceAt(offset: number, n: number): void;
}

/** True when `sink` takes bytes at any offset. */
export function isRandomAccess(sink: FrameSink | undefined): sink is RandomAccessSink {
  const candidate = sink as Partial<RandomAccessSink> | undefined;
  return typeof candidate?.targetAt === 'function' && typeof candidate.advanceAt === 'function';
}
