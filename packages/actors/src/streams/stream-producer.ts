/**
 * The callee's side of streams: pulls an AsyncIterable (or buffers an
 * Observable, boundedly) and publishes items as credit allows.
 * @module
 */
import { isObservable, type Observable, type Subscription } from 'rxjs';
import { defaultCodec, SerializationError, type Transport } from '@tensorbus/core';
import { errorToWire, remoteErrorFrom } from '@tensorbus/core/internal';
import { disposeTransient } from '../tensors.js';
import type { CallerIdentity } from '../agent/call-context.js';
import { callScope, type AgentHost } from '../agent/host.js';
import { MAX_STREAM_CREDIT, type CallRequest } from '../agent/call-protocol.js';
import type { ControlMessage } from '../agent/control.js';
import { END, FAIL, ITEM, MAX_OBSERVABLE_BUFFER, STREAM_CANCEL, STREAM_CREDIT, streamKey } from './stream-protocol.js';

interface Producer {
  caller: string;
  /** The stream was opened by a verified caller: only that caller, shown, may grant credit or cancel. */
  verified: boolean;
  credit: number;
  cancelled: boolean;
  wake: (() => void) | undefined;
  stop: () => void;
}

/** Runs the streams this worker produces. */
export class StreamProducers {
  private readonly producers = new Map<string, Producer>();

  private readonly transport: Transport;
  private readonly worker: string;

  constructor(private readonly host: AgentHost) {
    this.transport = host.transport;
    this.worker = host.name;
    host.onControl(STREAM_CREDIT, (m, sender) => this.onCredit(m, sender));
    host.onControl(STREAM_CANCEL, (m, sender) => this.find(m, sender)?.stop());
  }

  /** Streams running now. */
  get active(): number {
    return this.producers.size;
  }

  /** Starts producing for an accepted STREAM request; `ended` runs once it is over, however it ends. */
  start(request: CallRequest, produce: () => unknown, caller: CallerIdentity, ended?: () => void): void {
    const open = request.open!;
    const key = streamKey(request.meta.from, open.id);
    const producer: Producer = { caller: request.meta.from, verified: caller.verified, credit: open.credit, cancelled: false, wake: undefined, stop: () => undefined };
    producer.stop = () => {
      producer.cancelled = true;
      producer.wake?.();
    };
    this.producers.set(key, producer);
    let seq = 0;
    const publish = (frame: unknown[]) => this.transport.publish(open.subject, defaultCodec.encode(frame, { host: this.host, peer: producer.caller }));
    const run = async () => {
      const source = await produce();
      const iterable = toIterable(source, producer);
      for await (const item of iterable) {
        if (producer.cancelled) {
          disposeTransient(item);
          break;
        }
        try {
          publish([ITEM, seq++, item]);
        } finally {
          disposeTransient(item);
        }
        producer.credit--;
        while (producer.credit <= 0 && !producer.cancelled) await new Promise<void>((resolve) => (producer.wake = resolve));
        if (producer.cancelled) break;
      }
      if (!producer.cancelled) publish([END, seq]);
    };
    callScope
      .run({ host: this.host, caller: caller.name, verified: caller.verified, origin: caller.origin, meta: request.meta }, run)
      .catch((error: unknown) => {
        if (producer.cancelled) return;
        const wire = error instanceof SerializationError ? errorToWire(error) : remoteErrorFrom(this.worker, error);
        try {
          publish([FAIL, seq, wire]);
        } catch {
          // The consumer is gone or the bus is closed: nothing left to tell.
        }
      })
      .finally(() => {
        disposeTransient(request.args);
        this.producers.delete(key);
        ended?.();
      });
  }

  /** Stops every stream consumed by `caller` (it left or failed). */
  cancelFor(caller: string): void {
    for (const producer of this.producers.values()) if (producer.caller === caller) producer.stop();
  }

  /** Stops every stream. */
  cancelAll(): void {
    for (const producer of this.producers.values()) producer.stop();
  }

  /** The stream `message` is about, if its sender may steer it. */
  private find(message: ControlMessage, sender: CallerIdentity | undefined): Producer | undefined {
    if (typeof message.caller !== 'string' || typeof message.id !== 'number') return undefined;
    const producer = this.producers.get(streamKey(message.caller, message.id));
    if (!producer || (producer.verified && (sender?.verified !== true || sender.name !== producer.caller))) return undefined;
    return producer;
  }

  private onCredit(message: ControlMessage, sender: CallerIdentity | undefined): void {
    const producer = this.find(message, sender);
    if (!producer || !Number.isSafeInteger(message.n) || !((message.n as number) > 0) || (message.n as number) > MAX_STREAM_CREDIT) return;
    producer.credit += message.n as number;
    const wake = producer.wake;
    producer.wake = undefined;
    wake?.();
  }
}

/** An AsyncIterable from what a stream function returned; Observables are buffered up to a bound. */
function toIterable(source: unknown, producer: Producer): AsyncIterable<unknown> {
  if (isObservable(source)) return observableIterable(source, producer);
  if (source && typeof (source as AsyncIterable<unknown>)[Symbol.asyncIterator] === 'function') {
    return source as AsyncIterable<unknown>;
  }
  if (source && typeof (source as Iterable<unknown>)[Symbol.iterator] === 'function' && typeof source !== 'string') {
    return (async function* () {
      yield* source as Iterable<unknown>;
    })();
  }
  throw new TypeError('a stream function must return an AsyncIterable, an Iterable or an Observable');
}

async function* observableIterable(source: Observable<unknown>, producer: Producer): AsyncGenerator<unknown> {
  const buffer: unknown[] = [];
  let done = false;
  let failure: { error: unknown } | undefined;
  let notify: (() => void) | undefined;
  const poke = () => {
    const n = notify;
    notify = undefined;
    n?.();
  };
  const subscription: Subscription = source.subscribe({
    next: (value) => {
      buffer.push(value);
      if (buffer.length > MAX_OBSERVABLE_BUFFER) {
        failure = { error: new Error(`the Observable produced more than ${MAX_OBSERVABLE_BUFFER} items ahead of its consumer; return an AsyncIterable for backpressure`) };
        subscription?.unsubscribe();
      }
      poke();
    },
    error: (error: unknown) => {
      failure = { error };
      poke();
    },
    complete: () => {
      done = true;
      poke();
    },
  });
  const previousStop = producer.stop;
  producer.stop = () => {
    subscription.unsubscribe();
    previousStop();
    poke();
  };
  try {
    while (true) {
      if (buffer.length > 0) {
        yield buffer.shift();
        continue;
      }
      if (failure) throw failure.error;
      if (done || producer.cancelled) return;
      await new Promise<void>((resolve) => (notify = resolve));
    }
  } finally {
    subscription.unsubscribe();
    disposeTransient(buffer);
  }
}
