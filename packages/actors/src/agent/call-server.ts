/**
 * The callee's side of the call protocol: decode a request, find the function
 * in the registry, run it in the call's scope without blocking other calls,
 * and answer exactly once. Whatever arrives, the worker answers with a typed
 * error or drops it; it never crashes.
 * @module
 */
import { defaultCodec, hasSinks, SerializationError, ShutdownError, UnknownFunctionError, type FrameDecoder, type FrameSink, type InboundMessage, type Payload, type Transport, type TransportSubscription } from '@tensorbus/core';
import { errorToWire, releaseOutgoing, remoteErrorFrom, type WireError } from '@tensorbus/core/internal';
import { callDescription, lookupCallable, type RegistryEntry } from '../registry/functions.js';
import { freeInstance } from '../rref/held-tensors.js';
import { disposeTransient } from '../tensors.js';
import type { CallAuth } from './call-auth.js';
import { isRefusal, type CallLog } from './call-log.js';
import type { CallerIdentity } from './call-context.js';
import { callScope, type AgentHost, type CallReferences, type CallWrapper, type StreamStarter, type WireContext } from './host.js';
import { CallTensors, outsideCalls } from './call-tensors.js';
import { CALL, ERROR, OK, parseRequest, replyKind, type CallRequest } from './call-protocol.js';
import type { WireTiming } from './profiler.js';
import { callSubject } from './subjects.js';
import { observeServe, type ObservedServe } from '../observe/call-spans.js';
import { observing } from '../observe/switch.js';
import { exclusiveServing } from '../platform/async-scope.js';
import { refuseComingBack } from './reentrancy.js';

/** Serves calls addressed to one worker. */
export class CallServer {
  /** Calls received per verified sender (for shutdown's quiescence check; unverified callers are not counted). */
  readonly receivedFrom: Record<string, number> = {};
  /** Calls running now. */
  running = 0;
  private subscription: TransportSubscription | undefined;
  /** Requests being decoded as they arrive (see {@link requestSink}), with the list their RRefs land in. */
  private readonly arriving = new WeakMap<FrameSink, { decoder: FrameDecoder; received: unknown[] }>();
  private accepting = true;
  private readonly wrappers: CallWrapper[] = [];
  /** The RRef side of calls (the RRef plugin). */
  private references: CallReferences | undefined;
  /** The producer side of streams (the streams plugin). */
  private startStream: StreamStarter | undefined;
  /**
   * What a call from `from` waits for before its caller is checked, if
   * anything (the host: a static group still forming, whose members' keys
   * come with it). Undefined: check at once.
   */
  awaitCaller: ((from: string) => Promise<void> | undefined) | undefined;

  constructor(
    private readonly transport: Transport,
    private readonly name: string,
    private readonly host: AgentHost,
    private readonly auth: CallAuth,
    private readonly log: CallLog,
  ) {}

  /** Decides what happens to the references calls carry; set once. */
  serveReferences(references: CallReferences): void {
    if (this.references !== undefined) throw new Error('call references are served by one plugin only');
    this.references = references;
  }

  /** Starts the producers of accepted stream requests; set once. */
  serveStreams(starter: StreamStarter): void {
    if (this.startStream !== undefined) throw new Error('streams are served by one plugin only');
    this.startStream = starter;
  }

  /** Adds a wrapper around every call's execution (outermost last). */
  wrap(wrapper: CallWrapper): void {
    this.wrappers.push(wrapper);
  }

  listen(): void {
    // Only this worker serves its call subject (membership keeps names unique): requests may come direct.
    // An in-process transport delivers in the sender's async scope: what the request decodes to is not the sender's call's.
    const handler = (message: InboundMessage) => void outsideCalls(() => this.handle(message));
    const transport = this.transport;
    this.subscription = hasSinks(transport)
      ? transport.subscribe(callSubject(this.name), handler, { exclusive: true, requestSink: (byteLength) => this.requestSink(byteLength) })
      : transport.subscribe(callSubject(this.name), handler);
  }

  /**
   * Where a large request's bytes go as they arrive, on a transport that
   * pulls them piece by piece: its tensors are allocated in the WASM heap at
   * once and read into in place, instead of into a buffer and then copied.
   */
  private requestSink(byteLength: number): FrameSink | undefined {
    const received: unknown[] = [];
    const decoder = defaultCodec.decoder(byteLength, { host: this.host, peer: undefined, received });
    if (decoder) this.arriving.set(decoder, { decoder, received });
    return decoder;
  }

  /** From now on, new calls are refused with ShutdownError. */
  refuse(): void {
    this.accepting = false;
  }

  close(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.log.close();
  }

  private async handle(message: InboundMessage): Promise<void> {
    // For a profiled call's report (when its request asks; the caller's profiler decides).
    const arrivedAt = performance.now();
    this.running++;
    const arrived = message.sink && this.arriving.get(message.sink);
    try {
      // A request nobody can be answered on (no reply subject) is dropped.
      if (!message.reply) return arrived?.decoder.abandon();
      if (!this.accepting) {
        arrived?.decoder.abandon();
        this.answerError(message, undefined, errorToWire(new ShutdownError(`worker '${this.name}' is shutting down`)), false);
        return;
      }
      let request: CallRequest;
      let context: WireContext | undefined;
      let caller: CallerIdentity;
      let decoded: unknown;
      // RRefs read from the request land here (nothing is added for calls without any).
      const received: unknown[] = arrived?.received ?? [];
      try {
        // The sender is known only once decoded: extensions read their sender from their own payload.
        // In-process, a large request is decoded sharing the caller's tensors; one that arrived into
        // tensor memory is already decoded.
        decoded = arrived ? arrived.decoder.result() : defaultCodec.decodePayload(message.payload ?? message.data, { host: this.host, peer: undefined, received });
        request = parseRequest(decoded);
        // One context object per call, `sent` filled in below for a call with the RRef plugin (no copy of it per call).
        context = { host: this.host, peer: request.meta.from, sent: undefined };
        // A hop that arrives before this worker heard of its caller would go unverified, uncounted by shutdown's barrier.
        const forming = this.awaitCaller?.(request.meta.from);
        if (forming !== undefined) await forming;
        caller = { name: request.meta.from, verified: this.auth.check(request.meta.from, request.kind, request.fn, request.meta.auth), origin: message.origin };
        // Only a caller that showed who it is counts as that member for shutdown's barrier.
        if (caller.verified) this.receivedFrom[caller.name] = (this.receivedFrom[caller.name] ?? 0) + 1;
      } catch (error) {
        // Refused after decoding (not a call, or a sender that cannot be checked): what it carried goes now.
        disposeTransient(decoded);
        if (received.length > 0) this.references?.settled(received);
        this.answerError(message, undefined, errorToWire(error), false);
        return;
      }
      if (this.references === undefined) {
        await this.serve(message, request, context, caller, [], arrivedAt);
        return;
      }
      if (request.kind !== CALL) {
        // A stream's RRef arguments are waited for as a call's are, and live as long as the stream, unless kept.
        const references = this.references;
        await this.serve(message, request, context, caller, received, arrivedAt, received.length > 0 ? () => references.settled(received, request) : undefined);
        return;
      }
      // The RRefs a call carries live as long as the call, unless its function keeps them: those it received,
      // and those its result hands to the caller.
      const sent: unknown[] = [];
      context.sent = sent;
      try {
        await this.serve(message, request, context, caller, received, arrivedAt);
      } finally {
        if (received.length + sent.length > 0) this.references.settled([...received, ...sent], request);
      }
    } finally {
      this.running--;
    }
  }

  private async serve(
    message: InboundMessage,
    request: CallRequest,
    context: WireContext,
    caller: CallerIdentity,
    received: unknown[],
    arrivedAt: number,
    streamEnded?: () => void,
  ): Promise<void> {
    let result: unknown;
    let timing: WireTiming | undefined;
    // The tensors the call makes: disposed when it ends, but what it returns or keeps (see call-tensors.ts).
    let made: CallTensors | undefined;
    let entry: RegistryEntry | undefined;
    // A traced or measured call (observe/): a span and counts around the run, told the reply as it goes.
    let observed: ObservedServe | undefined;
    try {
      // A function starts only once the RRefs among its arguments are usable here (their values exist, their forks are confirmed).
      if (received.length > 0) await this.references!.ready(received, caller, request);
      entry = lookupCallable(request.fn, this.name);
      const found = entry;
      const produce = () => found.invoke(request.args);
      if (request.kind !== CALL) {
        // From here the producer runs `streamEnded` when the stream is over.
        const ended = streamEnded;
        streamEnded = undefined;
        if (this.startStream === undefined) throw new UnknownFunctionError(`worker '${this.name}' serves no streams`);
        this.startStream(request, produce, caller, ended);
        result = null;
      } else {
        const run = () => callScope.run({ host: this.host, caller: caller.name, verified: caller.verified, origin: caller.origin, meta: request.meta }, async () => produce());
        let wrapped = this.wrappers.reduce<() => Promise<unknown>>((inner, wrapper) => () => wrapper(request.meta, inner, request.args, caller), run);
        if (observing.on) wrapped = (observed = observeServe(this.host, request.fn, request.meta, caller.verified, message, wrapped)).run;
        if (entry.tidy) made = new CallTensors();
        const startedAt = request.meta.prof === 1 ? performance.now() : 0;
        const tensors = made;
        const serve = tensors === undefined ? wrapped : () => tensors.run(wrapped);
        // A tab, whose async scopes are global slots, serves one call at a time (platform/async-scope.browser.ts);
        // a call that came back from the one it serves would wait on itself, and is refused (reentrancy.ts).
        if (exclusiveServing !== undefined) refuseComingBack(request.meta, request.fn, this.name, exclusiveServing.serving());
        result = await (exclusiveServing === undefined ? serve() : exclusiveServing.serve(serve));
        // The caller profiles this call: say how long it waited here and how long it ran, µs.
        if (request.meta.prof === 1) timing = { q: (startedAt - arrivedAt) * 1000, x: (performance.now() - startedAt) * 1000 };
      }
    } catch (error) {
      disposeTransient(request.args);
      streamEnded?.();
      made?.close();
      // The function failed; a refusal (unknown function or method, RRef or context, a peer over its bounds) is the caller's to fix.
      if (entry !== undefined && !isRefusal(error)) this.log.failed(callDescription(entry, request.args), caller.name, error);
      this.answerError(message, context, remoteErrorFrom(this.name, error), caller.verified, observed);
      return;
    }
    let bytes: Payload;
    try {
      const kind = replyKind(OK, caller.verified);
      const reply = timing ? [kind, result, timing] : [kind, result];
      // A large result is read out of tensor memory as it is sent (it is kept until then).
      bytes = hasSinks(this.transport) ? defaultCodec.encodeOutgoing(reply, context) : defaultCodec.encode(reply, context);
    } catch (error) {
      disposeTransient(request.args, result);
      made?.close();
      const reason = error instanceof Error ? error.message : String(error);
      this.answerError(message, context, errorToWire(new SerializationError(`worker '${this.name}' cannot encode the result of '${request.fn}': ${reason}`)), caller.verified, observed);
      return;
    }
    if (request.kind === CALL) disposeTransient(request.args, result);
    // An instance constructed for rpcSync is sent as a copy: nobody holds the one made here any more.
    if (entry.kind === 'class') freeInstance(result);
    made?.close();
    observed?.answered(bytes);
    try {
      message.respond(bytes);
    } catch {
      // The caller is gone or the transport closing: nobody to answer.
    } finally {
      releaseOutgoing(bytes);
    }
  }

  /** Answers with `wire`; `counted` says whether this request was counted in `receivedFrom` (the caller's `sentTo` follows it). */
  private answerError(message: InboundMessage, context: WireContext | undefined, wire: WireError, counted: boolean, observed?: ObservedServe): void {
    try {
      const bytes = defaultCodec.encode([replyKind(ERROR, counted), wire], context);
      observed?.answered(bytes);
      message.respond(bytes);
    } catch {
      // Nobody to answer (see above).
    }
  }
}

