/**
 * What `rpcStream` returns: an rxjs `Observable` that is also an
 * `AsyncIterable`, so that the consumer's own pace returns the producer's
 * credit whether it is synchronous (a subscriber) or asynchronous (a
 * `for await` loop, or {@link concatMapStream}).
 * @module
 */
import { Observable } from 'rxjs';
import { disposeTransient } from '../tensors.js';
import { ConsumerWork } from './consumer-work.js';

/** Where an open stream delivers. */
export interface StreamSink<T> {
  item(value: T): void;
  end(): void;
  fail(error: Error): void;
}

/** An open stream, as its consumer steers it. */
export interface StreamChannel {
  /** The consumer has finished with `n` more items: the producer may send as many more. */
  consumed(n: number): void;
  /** Stops the producer; nothing more is delivered. */
  cancel(): void;
}

/**
 * A stream of the items a remote function yields (beyond PyTorch).
 *
 * Credit (`StreamOptions.credit` items the producer may send ahead) comes back
 * when the consumer has finished with an item:
 * - subscribed as an Observable, when the subscriber has finished with the
 *   item: when `next` returns for synchronous work, and when the promises made
 *   for it have settled for asynchronous work, also behind rxjs operators
 *   that queue items (`concatMap(async …)`, `mergeMap(f, n)`; see
 *   consumer-work.ts). A consumer that leaves a promise unsettled for good in
 *   an item's work holds the producer: use `for await` or
 *   {@link concatMapStream} there;
 * - iterated (`for await (const x of stream)`), when the loop asks for the
 *   next item, i.e. once the loop's body for the previous one has finished.
 *   Leaving the loop (`break`, `return`, a throw) cancels the producer.
 *
 * Each subscription and each iteration opens a stream of its own (cold).
 *
 * @example
 * ```ts
 * for await (const batch of agent.rpcStream<tf.Tensor>('loader', batches, [64], { credit: 4 })) {
 *   await trainOn(batch); // the loader is never more than 4 batches ahead
 *   batch.dispose();
 * }
 * ```
 */
export class RpcStream<T> extends Observable<T> implements AsyncIterable<T> {
  /** @internal */
  constructor(private readonly opener: (sink: StreamSink<T>) => StreamChannel) {
    super((subscriber) => {
      let channel: StreamChannel | undefined;
      // Credit returns as the subscriber finishes with items, also work it does after `next` returned (consumer-work.ts).
      const work = new ConsumerWork((n) => channel?.consumed(n));
      channel = opener({
        item: (value) => work.deliver(() => subscriber.next(value)),
        end: () => subscriber.complete(),
        fail: (error) => subscriber.error(error),
      });
      return () => {
        work.close();
        channel?.cancel();
      };
    });
  }

  /** Pulls items one by one; credit returns as each next item is asked for. */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    return new StreamIterator<T>(this.opener);
  }
}

/** The pull side: items wait in a queue (at most `credit` of them, as the producer is held to it). */
class StreamIterator<T> implements AsyncIterator<T> {
  private channel: StreamChannel | undefined;
  private readonly queue: T[] = [];
  private ended = false;
  private failure: Error | undefined;
  private closed = false;
  /** An item was handed out and the consumer has not asked for the next one yet. */
  private holding = false;
  private waiting: { resolve: (result: IteratorResult<T>) => void; reject: (error: Error) => void } | undefined;

  constructor(private readonly opener: (sink: StreamSink<T>) => StreamChannel) {}

  next(): Promise<IteratorResult<T>> {
    if (this.closed) return Promise.resolve({ done: true, value: undefined });
    if (!this.channel) this.open();
    // Asking for the next item is what says the previous one is finished.
    if (this.holding) {
      this.holding = false;
      this.channel!.consumed(1);
    }
    if (this.queue.length > 0) {
      this.holding = true;
      return Promise.resolve({ done: false, value: this.queue.shift()! });
    }
    if (this.failure) {
      this.closed = true;
      return Promise.reject(this.failure);
    }
    if (this.ended) {
      this.closed = true;
      return Promise.resolve({ done: true, value: undefined });
    }
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  /** Leaving the loop early: cancels the producer and disposes tensors of items never handed out. */
  return(): Promise<IteratorResult<T>> {
    if (!this.closed) {
      this.closed = true;
      this.channel?.cancel();
      disposeTransient(this.queue.splice(0));
      this.settle({ done: true, value: undefined });
    }
    return Promise.resolve({ done: true, value: undefined });
  }

  private open(): void {
    this.channel = this.opener({
      item: (value) => {
        if (this.closed) {
          disposeTransient(value);
        } else if (this.waiting) {
          this.holding = true;
          this.settle({ done: false, value });
        } else {
          this.queue.push(value);
        }
      },
      end: () => {
        this.ended = true;
        if (this.waiting) {
          this.closed = true;
          this.settle({ done: true, value: undefined });
        }
      },
      fail: (error) => {
        this.failure = error;
        if (this.waiting) {
          this.closed = true;
          const { reject } = this.waiting;
          this.waiting = undefined;
          reject(error);
        }
      },
    });
  }

  private settle(result: IteratorResult<T>): void {
    const waiting = this.waiting;
    this.waiting = undefined;
    waiting?.resolve(result);
  }
}
