/**
 * `concatMapStream`: rxjs `concatMap` for an {@link RpcStream}, with the
 * stream's credit coming back only when each item's work has finished.
 * @module
 */
import { concatMap, from, Observable, type ObservableInput, type OperatorFunction, type Subscription } from 'rxjs';
import { RpcStream } from './rpc-stream.js';

/**
 * Maps each item of an `rpcStream` to an `ObservableInput` (a promise, an
 * async function's result, an Observable) and emits its values in order, one
 * item at a time, like rxjs `concatMap`; but the next item is pulled from the
 * stream (and credit returned to the producer) only when the previous item's
 * work has completed, so the producer stays within its credit however slow the
 * work is. Applied to any other Observable it is `concatMap`. Put it first in
 * the `pipe`: an operator before it hides the stream.
 *
 * @example
 * ```ts
 * agent.rpcStream<Batch>('loader', batches, [64], { credit: 4 })
 *   .pipe(concatMapStream(async (batch) => train(batch)))
 *   .subscribe((loss) => console.log(loss));
 * ```
 */
export function concatMapStream<T, R>(project: (value: T, index: number) => ObservableInput<R>): OperatorFunction<T, R> {
  return (source) => {
    if (!(source instanceof RpcStream)) return source.pipe(concatMap(project));
    const stream = source as RpcStream<T>;
    return new Observable<R>((subscriber) => {
      const iterator = stream[Symbol.asyncIterator]();
      let inner: Subscription | undefined;
      let closed = false;
      const pull = (index: number): void => {
        iterator.next().then(
          (result) => {
            if (closed) return;
            if (result.done) return subscriber.complete();
            let input: ObservableInput<R>;
            try {
              input = project(result.value, index);
            } catch (error) {
              return subscriber.error(error);
            }
            inner = from(input).subscribe({
              next: (value) => subscriber.next(value),
              error: (error: unknown) => subscriber.error(error),
              complete: () => {
                inner = undefined;
                pull(index + 1);
              },
            });
          },
          (error: unknown) => subscriber.error(error),
        );
      };
      pull(0);
      return () => {
        closed = true;
        inner?.unsubscribe();
        void iterator.return?.();
      };
    });
  };
}
