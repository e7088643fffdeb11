/**
 * Graceful shutdown [shutdown(graceful=True)], without PyTorch's hangs.
 *
 * Static group: every worker that calls shutdown polls the others' status
 * (`sdstatus` on their control subjects). The group is quiescent when every
 * live worker has asked to shut down, none has calls running or pending, and
 * for every pair of live workers the calls one sent equal the calls the other
 * received; two identical quiescent rounds in a row end the barrier (a message
 * in flight between the rounds would change a counter). Workers that left or
 * failed are not waited for. Past `timeoutMs` the worker leaves anyway and
 * rejects with RpcTimeoutError naming whom it waited for.
 *
 * Dynamic group: the worker drains its own calls (sent and served), then leaves.
 * @module
 */
import { RpcTimeoutError } from '@tensorbus/core';
import type { ControlChannel } from './control.js';

/** What a worker reports while the group shuts down. */
export interface ShutdownStatus {
  /** This worker asked to shut down. */
  requested: boolean;
  /** Calls it is running or awaiting, and streams it produces. */
  busy: number;
  /** Calls sent, per destination. */
  sentTo: Record<string, number>;
  /** Calls received, per sender. */
  receivedFrom: Record<string, number>;
}

/** The parts of an agent the barrier needs. */
export interface BarrierParticipant {
  name: string;
  control: ControlChannel;
  status(): ShutdownStatus;
  /** Names of the live members of the group now. */
  liveMembers(): string[];
}

const POLL_MS = 15;
/** How long the first round waits for status answers, ms; doubled after a round that missed one, up to 2 s. */
const FIRST_ANSWER_MS = 250;

/** Waits for the static group's quiescence; rejects with RpcTimeoutError after `timeoutMs` (0 = never). */
export async function staticBarrier(self: BarrierParticipant, timeoutMs: number): Promise<void> {
  const deadline = timeoutMs > 0 ? Date.now() + timeoutMs : Infinity;
  let previous: string | undefined;
  let waitingFor: string[] = [];
  // A peer that has just left may still get the request and never answer: ask again soon rather
  // than wait long; a peer that is only slow gets longer each round.
  let answerMs = FIRST_ANSWER_MS;
  while (Date.now() < deadline) {
    const snapshot = await poll(self, Math.max(1, Math.min(answerMs, deadline - Date.now())));
    answerMs = [...snapshot.values()].includes(undefined) ? Math.min(2_000, answerMs * 2) : FIRST_ANSWER_MS;
    waitingFor = notReady(snapshot);
    const key = waitingFor.length === 0 ? fingerprint(snapshot) : undefined;
    if (key !== undefined && key === previous) return;
    previous = key;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  throw new RpcTimeoutError(
    `graceful shutdown of '${self.name}' timed out after ${timeoutMs} ms waiting for: ${waitingFor.join(', ') || 'in-flight calls to settle'}`,
  );
}

async function poll(self: BarrierParticipant, timeoutMs: number): Promise<Map<string, ShutdownStatus | undefined>> {
  const names = self.liveMembers();
  const statuses = await Promise.all(
    names.map(async (name) => {
      if (name === self.name) return self.status();
      try {
        const reply = (await self.control.request(name, { k: 'sdstatus' }, timeoutMs)) as ShutdownStatus;
        return typeof reply === 'object' && reply !== null && typeof reply.requested === 'boolean' ? reply : undefined;
      } catch {
        return undefined;
      }
    }),
  );
  return new Map(names.map((name, i) => [name, statuses[i]]));
}

/** Workers that keep the group from quiescence (with why). */
function notReady(snapshot: Map<string, ShutdownStatus | undefined>): string[] {
  const out: string[] = [];
  for (const [name, status] of snapshot) {
    if (!status) out.push(`${name} (no answer)`);
    else if (!status.requested) out.push(`${name} (has not called shutdown)`);
    else if (status.busy > 0) out.push(`${name} (${status.busy} call(s) outstanding)`);
  }
  if (out.length > 0) return out;
  for (const [a, sa] of snapshot) {
    for (const [b, sb] of snapshot) {
      if ((sa!.sentTo[b] ?? 0) !== (sb!.receivedFrom[a] ?? 0)) return [`${a}->${b} (calls in flight)`];
    }
  }
  return out;
}

function fingerprint(snapshot: Map<string, ShutdownStatus | undefined>): string {
  return JSON.stringify([...snapshot].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, s]) => [name, s!.sentTo, s!.receivedFrom]));
}
