/**
 * One timeout for the whole of an RRef operation: the wait for the RRef to be
 * usable (its creation, its fork's confirmation) and the call that follows
 * share the caller's `timeoutMs`, so `toHere({ timeoutMs: 10 })` on a value
 * still being made rejects after ~10 ms, not after the creation.
 * @module
 */
import { RpcTimeoutError } from '@tensorbus/core';
import { abortError } from '@tensorbus/core/internal';
import type { CallOptions } from '../agent/host.js';

/** The time left of an operation that started at `startedAt` with `timeoutMs` (0 = no limit). */
export class Budget {
  private readonly startedAt = Date.now();

  constructor(
    /** The whole operation's limit, ms; 0 = none. */
    readonly timeoutMs: number,
    readonly signal: AbortSignal | undefined,
  ) {}

  /** The budget of `options`, falling back to the agent's default timeout. */
  static of(options: CallOptions, defaultTimeoutMs: number): Budget {
    return new Budget(options.timeoutMs ?? defaultTimeoutMs, options.signal);
  }

  /** Ms left; Infinity without a limit. */
  left(): number {
    return this.timeoutMs > 0 ? this.timeoutMs - (Date.now() - this.startedAt) : Infinity;
  }

  /**
   * Resolves with `promise`, or rejects with RpcTimeoutError once the budget
   * is spent (naming `what`), or with the abort reason. Leaves no timer or
   * listener behind either way.
   */
  async wait<T>(promise: Promise<T>, what: () => string): Promise<T> {
    const left = this.left();
    if (this.signal?.aborted) throw abortError(this.signal);
    if (left === Infinity && this.signal === undefined) return promise;
    if (left <= 0) throw this.timeout(what());
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      return await new Promise<T>((resolve, reject) => {
        if (left !== Infinity) timer = setTimeout(() => reject(this.timeout(what())), left);
        if (this.signal) {
          onAbort = () => reject(abortError(this.signal));
          this.signal.addEventListener('abort', onAbort, { once: true });
        }
        promise.then(resolve, reject);
      });
    } finally {
      if (timer) clearTimeout(timer);
      if (onAbort) this.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Options for the call that follows the wait: the time left (at least 1 ms), same signal. */
  rest(options: CallOptions): CallOptions {
    if (this.timeoutMs <= 0) return options;
    const left = this.left();
    if (left <= 0) throw this.timeout('the call');
    return { ...options, timeoutMs: Math.max(1, Math.floor(left)) };
  }

  private timeout(what: string): RpcTimeoutError {
    return new RpcTimeoutError(`${what} did not happen within ${this.timeoutMs} ms`);
  }
}
