/**
 * The result of an asynchronous call [torch.futures.Future], backed by an rxjs
 * `AsyncSubject`: await it, `wait()` for it, ask `done()`, or take it as an
 * `Observable` that emits one value and completes.
 * @module
 */
import { AsyncSubject, type Observable } from 'rxjs';

/**
 * A value that will arrive from a remote call.
 *
 * @example
 * ```ts
 * const f = agent.rpcAsync('w1', add, [a, b]);
 * f.asObservable().subscribe((y) => y.print());
 * const [y1, y2] = await RpcFuture.all([f, agent.rpcAsync('w2', add, [a, b])]);
 * ```
 */
export class RpcFuture<T> implements PromiseLike<T> {
  private readonly subject = new AsyncSubject<T>();
  private readonly promise: Promise<T>;
  private settled = false;

  /** Follows `source`; a rejection nobody awaits is not reported as unhandled. */
  constructor(source: PromiseLike<T>) {
    this.promise = Promise.resolve(source).then(
      (value) => {
        this.settled = true;
        this.subject.next(value);
        this.subject.complete();
        return value;
      },
      (error: unknown) => {
        this.settled = true;
        this.subject.error(error);
        throw error;
      },
    );
    this.promise.catch(() => undefined);
  }

  /** A future already resolved with `value`. */
  static resolve<T>(value: T): RpcFuture<T> {
    return new RpcFuture<T>(Promise.resolve(value) as Promise<T>);
  }

  /** A future already rejected with `error`. */
  static reject<T = never>(error: unknown): RpcFuture<T> {
    return new RpcFuture<T>(Promise.reject(error));
  }

  /**
   * Resolves with every value in order, or rejects with the first error
   * without waiting for the rest [torch.futures.wait_all].
   */
  static all<T extends readonly unknown[]>(futures: { [K in keyof T]: PromiseLike<T[K]> }): RpcFuture<T> {
    return new RpcFuture(Promise.all(futures as readonly PromiseLike<unknown>[]) as unknown as Promise<T>);
  }

  /**
   * Waits for every future and resolves with one result per future, in order,
   * shaped as `Promise.allSettled` gives them; it never rejects, so one failed
   * call does not hide the others' values [torch.futures.collect_all].
   *
   * @example
   * ```ts
   * const results = await RpcFuture.allSettled([agent.rpcAsync('w1', f, []), agent.rpcAsync('w2', f, [])]);
   * for (const r of results) if (r.status === 'rejected') console.log(r.reason);
   * ```
   */
  static allSettled<T extends readonly unknown[]>(futures: { [K in keyof T]: PromiseLike<T[K]> }): RpcFuture<{ -readonly [K in keyof T]: PromiseSettledResult<Awaited<T[K]>> }> {
    return new RpcFuture(Promise.allSettled(futures as readonly PromiseLike<unknown>[]) as unknown as Promise<{ -readonly [K in keyof T]: PromiseSettledResult<Awaited<T[K]>> }>);
  }

  then<R1 = T, R2 = never>(
    onFulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onRejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.promise.then(onFulfilled, onRejected);
  }

  /** Waits for the value [Future.wait]. */
  wait(): Promise<T> {
    return this.promise;
  }

  /** True once the value or the error has arrived [Future.done]. */
  done(): boolean {
    return this.settled;
  }

  /** One value then complete, or an error. */
  asObservable(): Observable<T> {
    return this.subject.asObservable();
  }

  /** A future of `fn(value)` [Future.then]. */
  map<R>(fn: (value: T) => R | PromiseLike<R>): RpcFuture<R> {
    return new RpcFuture(this.promise.then(fn));
  }
}
