/**
 * The caller's side of the call protocol: encode, send, decode, and settle
 * each call exactly once (reply, timeout, abort, the callee's departure, or
 * shutdown). Calls pending to a worker that leaves or fails reject at once.
 * @module
 */
import {
  defaultCodec,
  hasSinks,
  RequestFailure,
  RpcTimeoutError,
  ShutdownError,
  TensorbusError,
  WorkerUnavailableError,
  type Frame,
  type FrameDecoder,
  type Transport,
} from '@tensorbus/core';
import { errorFromWire, releaseOutgoing } from '@tensorbus/core/internal';
import type { CallAuth } from './call-auth.js';
import type { CallMeta } from './call-context.js';
import type { AgentHost, CallOptions, CallTap, WireContext } from './host.js';
import { CALL, OK, parseReply, type StreamOpen, STREAM } from './call-protocol.js';
import { madeByCurrentCall } from './call-tensors.js';
import { checkRemoteTiming, Profiler } from './profiler.js';
import { callSubject } from './subjects.js';
import { observeCall, type CallBytes } from '../observe/call-spans.js';
import { observing } from '../observe/switch.js';

/**
 * A call awaiting its reply, as the client tracks it: a departure or shutdown
 * ends it through the transport's canceller (see RequestOptions.canceller; no
 * AbortController per call), and `reason` says why.
 */
interface PendingCall {
  reason: TensorbusError | undefined;
  cancel: ((reason: Error) => void) | undefined;
}

/** Destinations whose empty set of pending calls is kept for their next call. */
export const KEEP_EMPTY_SETS = 256;

/** Ends `call` with `error`, once. */
function failCall(call: PendingCall, error: TensorbusError): void {
  if (call.reason !== undefined) return;
  call.reason = error;
  call.cancel?.(error);
}

/**
 * For a transport that does not hand out a canceller: the call stops waiting
 * when cancelled (a reply that still comes is let go), the transport's request
 * runs on until its own timeout.
 */
function cancellable(call: PendingCall, reply: Promise<Frame>): Promise<Frame> {
  return new Promise<Frame>((resolve, reject) => {
    call.cancel = reject;
    // The reply is the call's unless the call was cancelled before it came.
    reply.then((frame) => (call.reason === undefined ? resolve(frame) : frame.release()), reject);
  });
}

/** Sends calls and tracks the ones pending, per destination. */
export class CallClient {
  /** Calls sent per destination (for shutdown's quiescence check). */
  readonly sentTo: Record<string, number> = {};
  /** Observers of calls (see {@link CallTap}). */
  readonly taps: CallTap[] = [];
  /** The agent's profiles: while one records, calls are measured (see profiler.ts). */
  readonly profiler = new Profiler();
  private readonly pending = new Map<string, Set<PendingCall>>();

  constructor(
    private readonly transport: Transport,
    private readonly self: string,
    private readonly host: AgentHost | undefined,
    private readonly defaultTimeoutMs: () => number,
    private readonly auth: CallAuth,
  ) {}

  /** Number of calls awaiting a reply. */
  get inFlight(): number {
    let n = 0;
    for (const set of this.pending.values()) n += set.size;
    return n;
  }

  /** Destinations with a set of pending calls kept (for tests: bounded, see {@link KEEP_EMPTY_SETS}). */
  get destinationsTracked(): number {
    return this.pending.size;
  }

  /** Runs `fn(args)` on `to` and resolves with its result. */
  call(to: string, fn: string, args: unknown[], meta: CallMeta, options: CallOptions = {}): Promise<unknown> {
    let told: Array<(value: unknown) => void> | undefined;
    for (const tap of this.taps) {
      const onResult = tap(to, args, meta);
      if (onResult !== undefined) (told ??= []).push(onResult);
    }
    meta.auth = this.auth.seal(to, CALL, fn);
    // Traced or measured calls (observe/): a span and counts around the send; one check otherwise.
    const result = observing.on
      ? observeCall(this.host, this.self, to, fn, meta, this.transport, (bytes) => this.send(to, [CALL, fn, args, meta], fn, options, bytes))
      : this.send(to, [CALL, fn, args, meta], fn, options);
    if (told === undefined) return result;
    const observers = told;
    return result.then((value) => {
      for (const onResult of observers) onResult(value);
      return value;
    });
  }

  /** Opens a stream of `fn(args)` on `to`; resolves once the callee accepted it. */
  openStream(to: string, fn: string, args: unknown[], meta: CallMeta, open: StreamOpen, options: CallOptions = {}): Promise<unknown> {
    meta.auth = this.auth.seal(to, STREAM, fn);
    return this.send(to, [STREAM, fn, args, meta, open], fn, options);
  }

  /** Rejects every call pending to `worker` with `error`. */
  failAll(worker: string, error: TensorbusError): void {
    const set = this.pending.get(worker);
    if (set === undefined) return;
    for (const call of set) failCall(call, error);
    if (set.size === 0) this.pending.delete(worker);
  }

  /** Rejects every pending call with `error`. */
  failEverything(error: TensorbusError): void {
    for (const worker of this.pending.keys()) this.failAll(worker, error);
  }

  /** Sends `request` and resolves with the result; `bytes`, when given, gets the sizes each way (observed calls). */
  private async send(to: string, request: unknown[], fn: string, options: CallOptions, bytes?: CallBytes): Promise<unknown> {
    // Only calls (not stream openings) are profiled; unprofiled calls measure nothing.
    const profiled = request[0] === CALL && this.profiler.recording;
    const startedAt = profiled ? performance.now() : 0;
    if (profiled) (request[3] as CallMeta).prof = 1;
    const context: WireContext = { host: this.host, peer: to };
    // Large tensors are read out of tensor memory as they are sent, and a large reply is decoded as it arrives.
    const sinks = hasSinks(this.transport) ? this.transport : undefined;
    const payload = sinks ? defaultCodec.encodeOutgoing(request, context) : defaultCodec.encode(request, context);
    const sentAt = profiled ? performance.now() : 0;
    if (bytes !== undefined) bytes.sent = payload.byteLength;
    let arrivedAt = 0;
    let recorded = false;
    let replyBytesLength = 0;
    let decoder: FrameDecoder | undefined;
    let over = false;
    // A reply that comes after the call is over (timed out, aborted) is not decoded at all.
    const replySink = (byteLength: number) => {
      replyBytesLength = byteLength;
      return over ? undefined : (decoder = defaultCodec.decoder(byteLength, context));
    };
    const call: PendingCall = { reason: undefined, cancel: undefined };
    let set = this.pending.get(to);
    if (!set) this.pending.set(to, (set = new Set()));
    set.add(call);
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs();
    this.sentTo[to] = (this.sentTo[to] ?? 0) + 1;
    try {
      // The caller's signal goes to the transport as it is; departures and shutdown end the call through its canceller.
      const sent = sinks
        ? sinks.request(callSubject(to), payload, { timeoutMs, signal: options.signal, replySink, canceller: (cancel) => (call.cancel = cancel) })
        : this.transport.request(callSubject(to), payload, { timeoutMs, signal: options.signal });
      const replyBytes = await (call.cancel !== undefined ? sent : cancellable(call, sent));
      replyBytesLength ||= replyBytes.byteLength;
      if (bytes !== undefined) bytes.received = replyBytesLength;
      if (profiled) arrivedAt = performance.now();
      const { reply, counted } = parseReply(decoder ? decoder.result() : defaultCodec.decode(replyBytes, context));
      // The callee did not count this call as ours (it could not check who sent it): neither does shutdown's barrier.
      if (!counted) this.sentTo[to]!--;
      if (profiled) {
        recorded = true;
        this.recordCall(to, fn, startedAt, sentAt, arrivedAt, payload.byteLength, replyBytesLength, reply[0] === OK ? reply[2] : undefined, reply[0] === OK ? undefined : reply[1].code);
      }
      if (reply[0] === OK) {
        // A call made while serving one: its result is that call's, wherever the transport decoded it.
        madeByCurrentCall(reply[1]);
        return reply[1];
      }
      throw errorFromWire(reply[1]);
    } catch (error) {
      // A call that failed before its reply was read (timeout, abort, departure, a malformed reply) is recorded too.
      if (profiled && !recorded) {
        this.recordCall(to, fn, startedAt, sentAt, arrivedAt || performance.now(), payload.byteLength, replyBytesLength, undefined, (error as { code?: string }).code ?? 'ERROR');
      }
      // Nobody received it: keep the counters of shutdown's barrier matched.
      if ((error as { code?: string }).code === 'WORKER_UNAVAILABLE' && call.reason === undefined) this.sentTo[to]!--;
      throw this.explain(error, call, to, fn, timeoutMs);
    } finally {
      // A reply still arriving (timed out, aborted) is disposed once in; the request's tensors go once sent.
      over = true;
      (decoder as FrameDecoder | undefined)?.abandon();
      releaseOutgoing(payload);
      set.delete(call);
      // A destination's set stays for its next call (one call at a time would make and drop one per call);
      // past a bound, empty ones go as their calls end, as does the set of a worker that left.
      if (set.size === 0 && (call.reason !== undefined || this.pending.size > KEEP_EMPTY_SETS) && this.pending.get(to) === set) this.pending.delete(to);
    }
  }

  /** Records a call that ended into the recording profiles; `timing` is the callee's report, checked here. */
  private recordCall(to: string, fn: string, startedAt: number, sentAt: number, arrivedAt: number, requestBytes: number, responseBytes: number, timing: unknown, error: string | undefined): void {
    const endedAt = performance.now();
    const roundTripUs = (arrivedAt - sentAt) * 1000;
    const remote = checkRemoteTiming(timing, roundTripUs);
    this.profiler.record({
      name: `rpc#${fn}(${this.self} -> ${to})`,
      worker: to,
      caller: this.self,
      function: fn,
      requestBytes,
      responseBytes,
      startedAt,
      durationUs: (endedAt - startedAt) * 1000,
      encodeUs: (sentAt - startedAt) * 1000,
      queueUs: remote?.queueUs,
      remoteUs: remote?.remoteUs,
      transportUs: roundTripUs - (remote ? remote.queueUs + remote.remoteUs : 0),
      decodeUs: (endedAt - arrivedAt) * 1000,
      ...(error !== undefined ? { error: String(error).slice(0, 64) } : {}),
    });
  }

  private explain(error: unknown, call: PendingCall, to: string, fn: string, timeoutMs: number): unknown {
    if (call.reason !== undefined) return call.reason;
    if (error instanceof RpcTimeoutError) {
      return new RpcTimeoutError(`call of '${fn}' on worker '${to}' got no answer within ${timeoutMs} ms`, { cause: error });
    }
    if (error instanceof ShutdownError) return new ShutdownError(`call of '${fn}' on '${to}' was cut off: ${error.message}`);
    if (error instanceof TensorbusError && error.code === 'WORKER_UNAVAILABLE') {
      // Decided by the reason the transport gives (see RequestFailure), never by the message text.
      const reason = error instanceof WorkerUnavailableError ? error.reason : undefined;
      const why = reason === RequestFailure.NoResponders ? 'is not in the group (nobody serves its calls)' : `went away during the call of '${fn}'`;
      return new WorkerUnavailableError(`worker '${to}' ${why}`, { cause: error, reason });
    }
    return error;
  }
}
