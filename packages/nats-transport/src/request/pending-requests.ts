/**
 * The requests of one transport awaiting replies on its one multiplexed
 * inbox (`<inbox>.<token>`), by token, as nats.js keeps them in its
 * `MuxSubscription` (nats-base-client/muxsubscription.ts). A request leaves
 * the table when it settles, whichever way (see pending-request.ts).
 * @module
 */
import { PendingRequest, type PendingRequestOptions } from './pending-request.js';

/** Options of {@link PendingRequests.open}. */
export type OpenOptions = Omit<PendingRequestOptions, 'token' | 'replyBase'>;

/** The pending-request table of one mux inbox. */
export class PendingRequests {
  private readonly byToken = new Map<string, PendingRequest>();
  private nextToken = 0;
  private readonly base: string;

  /** @param inbox the mux inbox; replies come on `<inbox>.<token>` */
  constructor(inbox: string) {
    this.base = `${inbox}.`;
  }

  /** Requests pending. */
  get size(): number {
    return this.byToken.size;
  }

  /** A new request with a token of its own, in the table until it settles. */
  open(options: OpenOptions): PendingRequest {
    const token = (++this.nextToken).toString(36);
    const onEnd = options.onEnd;
    const request = new PendingRequest({
      token,
      subject: options.subject,
      label: options.label,
      replyBase: this.base,
      timeoutMs: options.timeoutMs,
      signal: options.signal,
      onEnd: onEnd === undefined ? () => this.byToken.delete(token) : (error) => {
        this.byToken.delete(token);
        onEnd(error);
      },
    });
    // Aborted before it began: settled already, never in the table.
    if (!request.done) this.byToken.set(token, request);
    return request;
  }

  /** The pending request a reply on `subject` is for, if any. */
  forReply(subject: string): PendingRequest | undefined {
    return subject.startsWith(this.base) ? this.byToken.get(subject.slice(this.base.length)) : undefined;
  }

  /** Every pending request (a copy: settling them changes the table). */
  all(): PendingRequest[] {
    return [...this.byToken.values()];
  }
}
