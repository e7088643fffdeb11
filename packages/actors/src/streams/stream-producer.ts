/**
 * The callee's side of streams: pulls an AsyncIterable (or buffers an
 * Observable, boundedly) and publishes items as credit allows.
 *
 * What a stream holds here (its arguments, its function's own state and
 * tensors) is bounded as the other state peers make: each peer may have
 * `peerLimits.streamsPerPeer` streams open here (counted as in
 * peer-limits.ts accountableName: an unverified caller by its account, not
 * the name it claims); a stream of a member stops when the member leaves or
 * fails; a stream of anyone else stops once it waited `peerLimits.leaseMs`
 * for credit its consumer did not send (its lease). A request that came
 * through another NATS account's import is refused: neither its items nor
 * its credit can cross the account boundary.
 * @module
 */
import { isObservable, type Observable, type Subscription } from 'rxjs';
import { defaultCodec, PermissionDeniedError, SerializationError, StreamError, type Transport } from '@tensorbus/core';
import { errorToWire, remoteErrorFrom } from '@tensorbus/core/internal';
import { accountableName, PeerCounter } from '../peer-limits.js';
import { disposeTransient } from '../tensors.js';
import type { CallerIdentity } from '../agent/call-context.js';
import { callScope, type AgentHost } from '../agent/host.js';
import { MAX_STREAM_CREDIT, type CallRequest } from '../agent/call-protocol.js';
import type { ControlMessage } from '../agent/control.js';
import { END, FAIL, ITEM, MAX_OBSERVABLE_BUFFER, STREAM_CANCEL, STREAM_CREDIT, streamKey } from './stream-protocol.js';
import { unrefTimer } from '../platform/process.js';

interface Producer {
  caller: string;
  /** The stream was opened by a verified caller: only that caller, shown, may grant credit or cancel. */
  verified: boolean;
  credit: number;
  /** When its consumer was last heard from (the opening, credit), ms since the epoch: an unverified one's lease runs from there. */
  heardAt: number;
  cancelled: boolean;
  /** Why it stopped, when its consumer is to be told (its lease ran out). */
  failure: Error | undefined;
  wake: (() => void) | undefined;
  stop: () => void;
}

/** Runs the streams this worker produces. */
export class StreamProducers {
  private readonly producers = new Map<string, Producer>();
  /** Open streams per peer (accountableName). */
  private readonly perPeer = new PeerCounter();

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

  /**
   * Starts producing for an accepted STREAM request; `ended` runs once it is
   * over, however it ends (also when it is refused).
   * @throws PermissionDeniedError for a request from another NATS account;
   *   StreamError 'STREAM_LIMIT_EXCEEDED' past the caller's `streamsPerPeer`.
   */
  start(request: CallRequest, produce: () => unknown, caller: CallerIdentity, ended?: () => void): void {
    const peer = this.admit(caller, ended);
    const open = request.open!;
    const key = streamKey(request.meta.from, open.id);
    const producer: Producer = {
      caller: request.meta.from,
      verified: caller.verified,
      credit: open.credit,
      heardAt: Date.now(),
      cancelled: false,
      failure: undefined,
      wake: undefined,
      stop: () => undefined,
    };
    producer.stop = () => {
      producer.cancelled = true;
      producer.wake?.();
    };
    this.perPeer.add(peer, 1);
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
        while (producer.credit <= 0 && !producer.cancelled) await this.creditOrLease(producer);
        if (producer.cancelled) break;
      }
      if (producer.failure) publish([FAIL, seq, errorToWire(producer.failure)]);
      else if (!producer.cancelled) publish([END, seq]);
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
        this.perPeer.add(peer, -1);
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

  /** The name `caller`'s stream counts against, if it may open one; else runs `ended` and throws. */
  private admit(caller: CallerIdentity, ended: (() => void) | undefined): string {
    const peer = accountableName({ caller: caller.name, verified: caller.verified, origin: caller.origin });
    const limit = this.host.options.peerLimits.streamsPerPeer;
    let refusal: Error | undefined;
    if (caller.origin !== undefined) {
      refusal = new PermissionDeniedError(`worker '${this.worker}' streams only within its own NATS account: this request came through an import (${caller.origin}), which the stream's items and credit cannot cross; use calls`);
    } else if (this.perPeer.get(peer) >= limit) {
      refusal = new StreamError('STREAM_LIMIT_EXCEEDED', `'${caller.name}' has ${limit} streams open on worker '${this.worker}' (peerLimits.streamsPerPeer): end some first`);
    }
    if (refusal === undefined) return peer;
    ended?.();
    throw refusal;
  }

  /**
   * Waits until credit comes or the stream is stopped. A consumer that is not
   * a verified member has until `leaseMs` after it was last heard from: then
   * the stream stops, and the consumer is told so with STREAM_LEASE_EXPIRED.
   */
  private creditOrLease(producer: Producer): Promise<void> {
    return new Promise<void>((resolve) => {
      let lease: NodeJS.Timeout | undefined;
      producer.wake = () => {
        clearTimeout(lease);
        resolve();
      };
      if (producer.verified) return;
      const { leaseMs } = this.host.options.peerLimits;
      lease = setTimeout(() => {
        producer.failure = new StreamError('STREAM_LEASE_EXPIRED', `worker '${this.worker}' stopped a stream of '${producer.caller}': no credit from its consumer for ${leaseMs} ms (peerLimits.leaseMs)`);
        producer.stop();
      }, Math.max(0, producer.heardAt + leaseMs - Date.now()));
      unrefTimer(lease);
    });
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
    producer.heardAt = Date.now();
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
