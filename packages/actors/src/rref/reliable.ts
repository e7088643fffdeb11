/**
 * Acknowledged control messages: sent as requests, retried on silence, given
 * up when the peer is known gone or this worker stops. Handlers on the other
 * side are idempotent, so a duplicate caused by a lost acknowledgement is
 * harmless.
 * @module
 */
import { WorkerUnavailableError } from '@tensorbus/core';
import type { ControlMessage } from '../agent/control.js';
import { CONTROL_ATTEMPTS, CONTROL_TIMEOUT_MS, type RRefMessage } from './rref-protocol.js';

/** What the sender needs to know about the world. */
export interface ReliableSender {
  /** Sends `message` to `worker` over its control subject and resolves with the reply. */
  request(worker: string, message: ControlMessage, timeoutMs: number): Promise<unknown>;
  /** True when `worker` left or failed. */
  gone(worker: string): boolean;
  /** True once this worker stops. */
  stopped(): boolean;
}

/** Sends `message` to `worker` until acknowledged; resolves with the reply. */
export async function sendReliably(sender: ReliableSender, worker: string, message: RRefMessage): Promise<unknown> {
  let lastError: unknown;
  for (let attempt = 0; attempt < CONTROL_ATTEMPTS; attempt++) {
    if (sender.gone(worker)) throw new WorkerUnavailableError(`worker '${worker}' is gone`);
    if (sender.stopped()) throw lastError ?? new WorkerUnavailableError('this worker stopped');
    try {
      return await sender.request(worker, message, CONTROL_TIMEOUT_MS);
    } catch (error) {
      lastError = error;
      const code = (error as { code?: string }).code;
      if (code === 'SHUTDOWN') throw error;
      // Timeouts and brief unavailability (a reconnect) are retried with backoff.
      await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 25 * 2 ** attempt)));
    }
  }
  throw lastError;
}
