/**
 * The gateway's short retry: a call is sent again only when the transport
 * says it was never delivered (WorkerUnavailableError with reason
 * `RequestFailure.NoResponders`: nobody served the worker's subject, so the
 * call cannot have run), e.g. while a worker restarts. A timeout, a lost
 * responder or a remote error may have run the call, and is never retried.
 * @module
 */
import { RequestFailure, WorkerUnavailableError } from '@tensorbus/core';

/** How the gateway retries. */
export interface RetryPolicy {
  /** Attempts in all, the first included (default 3; 1 turns retries off). */
  attempts: number;
  /** Wait before the first retry, ms, doubled before each next one (default 100). */
  delayMs: number;
}

/** The default policy: 3 attempts, 100 then 200 ms apart. */
export const DEFAULT_RETRY: Readonly<RetryPolicy> = Object.freeze({ attempts: 3, delayMs: 100 });

/** True when `error` says the call was never delivered, so sending it again cannot run it twice. */
export function neverDelivered(error: unknown): boolean {
  return error instanceof WorkerUnavailableError && error.reason === RequestFailure.NoResponders;
}

/** Runs `attempt`, again after a short wait while it fails with {@link neverDelivered}; `retries` counts them. */
export async function withRetry<T>(policy: RetryPolicy, attempt: () => Promise<T>, retries: { count: number }): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt();
    } catch (error) {
      if (i >= policy.attempts || !neverDelivered(error)) throw error;
      retries.count++;
      await new Promise((resolve) => setTimeout(resolve, policy.delayMs * 2 ** (i - 1)));
    }
  }
}
