/**
 * The in-process bus: every `localTransport()` in one process (sharing a bus
 * name) sees the others, as workers on one NATS server would. Delivery is
 * asynchronous (a macrotask later), like a network, so code that works here
 * does not depend on re-entrancy that a real bus would not give.
 * @module
 */
import { BehaviorSubject } from 'rxjs';
import { RpcTimeoutError, ShutdownError, WorkerUnavailableError } from '../errors.js';
import { Frame } from '../owned-frame.js';
import {
  abortError,
  payloadFrame,
  RequestFailure,
  subjectMatches,
  writeInto,
  type Payload,
  type InboundMessage,
  type Transport,
  type TransportRoute,
  type TransportStatus,
  type TransportSubscription,
} from './transport.js';
import type { RouteReporting, SinkCapable, SinkRequestOptions, SinkSubscribeOptions } from './capabilities.js';

interface Listener {
  pattern: string;
  queue?: string;
  owner: LocalTransport;
  handler: (message: InboundMessage) => void;
}

/** Listeners by exact subject, plus those with wildcards (matched one by one). */
class ListenerIndex {
  private readonly exact = new Map<string, Set<Listener>>();
  private readonly wild = new Set<Listener>();

  add(listener: Listener): void {
    if (/(^|\.)(\*|>)(\.|$)/.test(listener.pattern)) {
      this.wild.add(listener);
      return;
    }
    let set = this.exact.get(listener.pattern);
    if (!set) this.exact.set(listener.pattern, (set = new Set()));
    set.add(listener);
  }

  delete(listener: Listener): void {
    if (this.wild.delete(listener)) return;
    const set = this.exact.get(listener.pattern);
    if (set?.delete(listener) && set.size === 0) this.exact.delete(listener.pattern);
  }

  has(listener: Listener): boolean {
    return this.wild.has(listener) || (this.exact.get(listener.pattern)?.has(listener) ?? false);
  }

  /** The listeners `subject` reaches. */
  *matching(subject: string): Iterable<Listener> {
    const set = this.exact.get(subject);
    if (set) yield* set;
    for (const listener of this.wild) if (subjectMatches(listener.pattern, subject)) yield listener;
  }
}

/**
 * A request delivered and not answered yet, held by the transports whose
 * listeners received it: when the last of them closes without answering, the
 * requester is told its responder went away (as a broken connection tells it
 * on the NATS transport's direct routes).
 */
class Unanswered {
  readonly holders = new Set<LocalTransport>();
  constructor(readonly lost: () => void) {}

  /** Let go by every holder (the request settled). */
  drop(): void {
    for (const holder of this.holders) holder.serving.delete(this);
    this.holders.clear();
  }
}

class LocalBus {
  readonly listeners = new ListenerIndex();
  private nextInbox = 0;

  inbox(): string {
    return `_INBOX.local.${++this.nextInbox}`;
  }

  /**
   * Delivers to every plain listener and one member of each queue group;
   * returns the count. Deferred bytes are handed on as they are (receivers
   * decode them sharing their tensors), held until each handler has run.
   * A `request` is held by each receiving transport until answered.
   */
  deliver(subject: string, data: Payload, reply: string | undefined, request?: Unanswered): number {
    const groups = new Map<string, Listener[]>();
    const targets: Listener[] = [];
    for (const listener of this.listeners.matching(subject)) {
      if (listener.queue === undefined) targets.push(listener);
      else groups.set(listener.queue, [...(groups.get(listener.queue) ?? []), listener]);
    }
    for (const members of groups.values()) targets.push(members[Math.floor(Math.random() * members.length)]!);
    const payload = data instanceof Uint8Array || data instanceof Frame ? undefined : data;
    // Each receiver gets a share of its own: the memory goes back once the last has decoded it.
    const frame = payload ? undefined : payloadFrame(data as Uint8Array | Frame);
    for (const target of targets) {
      const letGo = payload?.hold();
      let share = frame?.retain();
      if (request) {
        request.holders.add(target.owner);
        target.owner.serving.add(request);
      }
      const message: InboundMessage = {
        subject,
        get data() {
          return (share ??= payloadFrame(payload!));
        },
        reply,
        payload,
        respond: (answer) => {
          if (reply === undefined || target.owner.closed) return false;
          // Answered: this responder going away no longer concerns the request.
          if (request?.holders.delete(target.owner)) target.owner.serving.delete(request);
          this.deliver(reply, answer, undefined);
          return true;
        },
      };
      // A macrotask later, as from a socket: a flood of messages cannot starve timers.
      setImmediate(() => {
        try {
          if (this.listeners.has(target)) target.handler(message);
          else share?.release(); // nobody took it
        } finally {
          letGo?.();
        }
      });
    }
    frame?.release();
    return targets.length;
  }
}

/** The reply `message` for a request with `options`: its frame, or an empty one when a reply sink took it. */
function replyOf(message: InboundMessage, options: SinkRequestOptions): Frame {
  const sink = message.payload && options.replySink?.(message.payload.byteLength);
  if (!sink) return message.data;
  if (!sink.adopt?.(message.payload!)) writeInto(sink, message.payload!);
  return Frame.of(new Uint8Array(0));
}

const buses = new Map<string, LocalBus>();

/** Options of {@link localTransport}. */
export interface LocalTransportOptions {
  /** Separate in-process buses by name (default `'default'`). */
  bus?: string;
  /** Largest payload; default unlimited (2 GiB). */
  maxPayload?: number;
}

class LocalTransport implements Transport, SinkCapable, RouteReporting {
  readonly kind = 'local';
  readonly takesDeferredBytes = true as const;
  readonly maxPayload: number;
  readonly status$ = new BehaviorSubject<TransportStatus>('connected');
  closed = false;
  /** Requests delivered to this transport's listeners and not answered yet. */
  readonly serving = new Set<Unanswered>();
  private readonly mine = new Set<Listener>();
  private readonly pending = new Set<(error: Error) => void>();

  routeOf(): TransportRoute {
    return 'in-process';
  }

  constructor(private readonly bus: LocalBus, maxPayload: number) {
    this.maxPayload = maxPayload;
  }

  request(subject: string, payload: Payload, options: SinkRequestOptions = {}): Promise<Frame> {
    if (this.closed) return Promise.reject(new ShutdownError('the transport is closed'));
    if (options.signal?.aborted) return Promise.reject(abortError(options.signal));
    return new Promise<Frame>((resolve, reject) => {
      const inbox = this.bus.inbox();
      let timer: NodeJS.Timeout | undefined;
      let settled = false;
      const settle = (error: Error | undefined, value?: Frame) => {
        // Once: a cancel after the reply (or a second one) changes nothing.
        if (settled) {
          value?.release();
          return;
        }
        settled = true;
        request.drop();
        this.bus.listeners.delete(listener);
        this.pending.delete(fail);
        if (timer) clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        if (error) reject(error);
        else resolve(value!);
      };
      const fail = (error: Error) => settle(error);
      const request = new Unanswered(() => fail(new WorkerUnavailableError(`the responder of '${subject}' went away with the request in flight`, { reason: RequestFailure.ResponderLost })));
      const onAbort = () => fail(abortError(options.signal));
      const onReply = (m: InboundMessage) => {
        let value: Frame;
        try {
          value = replyOf(m, options);
        } catch (error) {
          return settle(error as Error);
        }
        settle(undefined, value);
      };
      const listener: Listener = { pattern: inbox, owner: this, handler: onReply };
      this.bus.listeners.add(listener);
      this.pending.add(fail);
      options.signal?.addEventListener('abort', onAbort, { once: true });
      options.canceller?.(fail);
      if (options.timeoutMs) {
        timer = setTimeout(() => fail(new RpcTimeoutError(`no reply on '${subject}' within ${options.timeoutMs} ms`)), options.timeoutMs);
      }
      if (this.bus.deliver(subject, payload, inbox, request) === 0) {
        fail(new WorkerUnavailableError(`no responders on '${subject}'`, { reason: RequestFailure.NoResponders }));
      }
    });
  }

  publish(subject: string, data: Uint8Array | Frame): void {
    if (this.closed) throw new ShutdownError('the transport is closed');
    this.bus.deliver(subject, data, undefined);
  }

  subscribe(subject: string, handler: (message: InboundMessage) => void, options: SinkSubscribeOptions = {}): TransportSubscription {
    if (this.closed) throw new ShutdownError('the transport is closed');
    const listener: Listener = { pattern: subject, queue: options.queue, owner: this, handler };
    this.bus.listeners.add(listener);
    this.mine.add(listener);
    return {
      unsubscribe: () => {
        this.bus.listeners.delete(listener);
        this.mine.delete(listener);
      },
    };
  }

  async flush(): Promise<void> {
    if (this.closed) throw new ShutdownError('the transport is closed');
    await new Promise<void>((resolve) => setImmediate(resolve));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const listener of this.mine) this.bus.listeners.delete(listener);
    this.mine.clear();
    // Its own requests first (one it serves itself is cut off by the close, not lost by a responder).
    for (const fail of [...this.pending]) fail(new ShutdownError('the transport was closed while a request was pending'));
    // Requests this transport received and never answered: their requesters learn it at once.
    for (const request of [...this.serving]) {
      request.holders.delete(this);
      if (request.holders.size === 0) request.lost();
    }
    this.serving.clear();
    this.status$.next('closed');
    this.status$.complete();
  }
}

/**
 * An in-process transport. All agents of a process that use the same bus see
 * each other.
 *
 * @example
 * ```ts
 * const a = await initRpc({ name: 'a', transport: localTransport() });
 * const b = await initRpc({ name: 'b', transport: localTransport() });
 * ```
 */
export function localTransport(options: LocalTransportOptions = {}): SinkCapable & RouteReporting {
  const name = options.bus ?? 'default';
  let bus = buses.get(name);
  if (!bus) buses.set(name, (bus = new LocalBus()));
  return new LocalTransport(bus, options.maxPayload ?? 2 ** 31 - 1);
}
