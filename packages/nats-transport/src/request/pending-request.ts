/**
 * One request awaiting its reply, settled exactly once. A reply, an error, the
 * timeout, an abort and the transport's close all go through one `settle`:
 * the first wins, later ones are ignored (a late reply's frame is released),
 * and the timer, the abort listener, the table entry and whatever the request
 * held are let go in that one place.
 *
 * This follows nats.js, whose `RequestOne` (nats-base-client/request.ts) is
 * resolved once through its `resolver` and removes itself from the
 * `MuxSubscription`'s map when done (nats-base-client/muxsubscription.ts);
 * tensorbus adds abort signals, reply sinks and its own typed errors.
 * @module
 */
import { RpcTimeoutError, type Frame } from '@tensorbus/core';
import { abortError } from '@tensorbus/core/internal';

/** Told once when the request ends: `error` is undefined when it was answered. */
export type OnEnd = (error: Error | undefined) => void;

/** Options of {@link PendingRequest}. */
export interface PendingRequestOptions {
  /** The request's token in its table (the last token of its reply subject). */
  token: string;
  /** The full subject it goes to (namespace included). */
  subject: string;
  /** The subject as the caller named it, for messages. */
  label: string;
  /** Where its replies come: this followed by the token (made only when asked for; direct calls never need it). */
  replyBase: string;
  /** Rejects with RpcTimeoutError after this many ms; 0 or undefined = never. */
  timeoutMs?: number;
  /** Aborting rejects it with an AbortError-named error. */
  signal?: AbortSignal;
  /** Told once when it ends, after everything else is let go (its table drops it here). */
  onEnd?: OnEnd;
}

/** A request settled exactly once (see the module comment). */
export class PendingRequest {
  readonly token: string;
  readonly subject: string;
  /** Resolves with the reply (a frame the caller owns) or rejects with why there is none. */
  readonly promise: Promise<Frame>;
  private settled = false;
  private timer: NodeJS.Timeout | undefined;
  /** Told in order when it ends. */
  private readonly ends: OnEnd[] = [];
  private readonly replyBase: string;
  private readonly signal: AbortSignal | undefined;
  /** Made only for a request with a signal (a listener costs more than the call it would watch). */
  private readonly onAbort: (() => void) | undefined;
  private resolvePromise!: (frame: Frame) => void;
  private rejectPromise!: (error: Error) => void;

  constructor(options: PendingRequestOptions) {
    this.token = options.token;
    this.subject = options.subject;
    this.replyBase = options.replyBase;
    this.signal = options.signal;
    this.promise = new Promise<Frame>((resolve, reject) => {
      this.resolvePromise = resolve;
      this.rejectPromise = reject;
    });
    if (options.onEnd) this.ends.push(options.onEnd);
    const signal = this.signal;
    if (signal) {
      const onAbort = (this.onAbort = () => this.reject(abortError(signal)));
      if (signal.aborted) {
        onAbort();
        return;
      }
      signal.addEventListener('abort', onAbort, { once: true });
    }
    const timeoutMs = options.timeoutMs;
    if (timeoutMs) {
      const label = options.label;
      this.timer = setTimeout(() => this.reject(new RpcTimeoutError(`no reply on '${label}' within ${timeoutMs} ms`)), timeoutMs);
    }
  }

  /** Where its replies come (the mux inbox and the token). */
  get replySubject(): string {
    return this.replyBase + this.token;
  }

  /** True once answered, failed, timed out or aborted. */
  get done(): boolean {
    return this.settled;
  }

  /**
   * Runs `onEnd` when the request ends (at once if it has): what the request
   * holds is let go there, the first handed in first.
   */
  whenDone(onEnd: OnEnd): void {
    if (this.settled) onEnd(new Error('the request is over'));
    else this.ends.push(onEnd);
  }

  /** Answers the request with `reply`, taking its share; released at once when the request is already over. */
  resolve(reply: Frame): void {
    if (!this.settle(undefined)) {
      reply.release();
      return;
    }
    this.resolvePromise(reply);
  }

  /** Fails the request with `error`, unless it is already over. */
  reject(error: Error): void {
    if (this.settle(error)) this.rejectPromise(error);
  }

  /** The one place a request ends: false when it already had. */
  private settle(error: Error | undefined): boolean {
    if (this.settled) return false;
    this.settled = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.onAbort) this.signal!.removeEventListener('abort', this.onAbort);
    for (const onEnd of this.ends.splice(0)) tell(onEnd, error);
    return true;
  }
}

function tell(onEnd: OnEnd, error: Error | undefined): void {
  try {
    onEnd(error);
  } catch {
    // Letting go of one thing must not keep the request from settling or the rest from being let go.
  }
}
