/**
 * Graceful shutdown [shutdown(graceful=True)], without PyTorch's hangs.
 *
 * Static group: every worker that calls shutdown polls the others' status
 * (SHUTDOWN_STATUS on their control subjects). The group is quiescent when every
 * live worker has asked to shut down, none has calls running or pending, and
 * for every pair of live workers the calls one sent equal the calls the other
 * received; two identical quiescent rounds in a row end the barrier (a message
 * in flight between the rounds would change a counter), the second asked as
 * soon as the first is answered. Workers that left or
 * failed are not waited for. Past `timeoutMs` the worker leaves anyway and
 * rejects with RpcTimeoutError naming whom it waited for.
 *
 * While a member has not asked to shut down, a worker asks again only every
 * {@link WAITING_POLL_MS}: each member tells the others when it asks
 * (SHUTDOWN_ASKED), and that ends the pause of a worker waiting for it.
 *
 * Status answers are signed by the member that gives them, over the asker's
 * nonce: only the member itself can answer for it (anyone else who listens on
 * its control subject, or replays an old answer, is not heard).
 *
 * Dynamic group: the worker drains its own calls (sent and served), then leaves.
 * The protocol, its messages and guarantees: docs/shutdown.md.
 * @module
 */
import { fillRandom, toBase64url } from '../platform/crypto.js';
import { RpcTimeoutError } from '@tensorbus/core';
import type { ControlMessage } from '../agent/control.js';
import { SHUTDOWN_STATUS } from './shutdown-protocol.js';
import { isCount, isWorkerName } from '../agent/wire-checks.js';

const NONCE_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

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
  /** Asks `worker` over its control subject and resolves with the decoded reply. */
  request(worker: string, message: ControlMessage, timeoutMs: number): Promise<unknown>;
  status(): ShutdownStatus;
  /** Names of the live members of the group now. */
  liveMembers(): string[];
  /** True when `signature` is member `from`'s signature of `text`. */
  verify(from: string, text: string, signature: unknown): boolean;
  /**
   * Resolves after `ms`, or as soon as one of `waitingOn` has told this
   * worker it asked to shut down (at once if one did since it was last asked).
   */
  pauseForAsk(ms: number, waitingOn: string[]): Promise<void>;
}

/** What signs a status answer. */
export interface StatusSigner {
  readonly name: string;
  sign(text: string): string;
}

/** A signed status answer: the status as JSON, and its signature. */
interface SignedStatus {
  s: string;
  sig: string;
}

const statusText = (asker: string, answerer: string, nonce: string, json: string): string =>
  `tensorbus sdstatus\0${asker}\0${answerer}\0${nonce}\0${json}`;

/** The answer to a SHUTDOWN_STATUS request `request`: `status` signed over the asker's nonce; undefined (no answer) for a malformed request. */
export function signStatus(signer: StatusSigner, request: ControlMessage, status: ShutdownStatus): SignedStatus | undefined {
  if (!isWorkerName(request.from) || typeof request.c !== 'string' || !NONCE_PATTERN.test(request.c)) return undefined;
  const s = JSON.stringify(status);
  return { s, sig: signer.sign(statusText(request.from, signer.name, request.c, s)) };
}

/** The status in a signed answer from `name`, if the answer is `name`'s, to this nonce, and well formed. */
function openStatus(self: BarrierParticipant, name: string, nonce: string, reply: unknown): ShutdownStatus | undefined {
  const answer = reply as SignedStatus;
  if (typeof answer !== 'object' || answer === null || typeof answer.s !== 'string') return undefined;
  if (!self.verify(name, statusText(self.name, name, nonce, answer.s), answer.sig)) return undefined;
  const status = JSON.parse(answer.s) as ShutdownStatus;
  const counts = (record: unknown) =>
    typeof record === 'object' && record !== null && Object.values(record).every(isCount);
  if (typeof status !== 'object' || status === null || typeof status.requested !== 'boolean' || !isCount(status.busy)) return undefined;
  return counts(status.sentTo) && counts(status.receivedFrom) ? status : undefined;
}

/** Pause between two rounds while every member has asked to shut down, ms (and the least pause of any). */
const POLL_MS = 15;
/**
 * Pause between two rounds while a member has not asked to shut down yet, ms,
 * unless it tells that it asked (SHUTDOWN_ASKED) before. A worker that is done
 * early (an RL example's observers, waiting for the agent the whole run) so
 * asks each member about once a second: each answer is an Ed25519 signature
 * to make and one to check (~0.1–0.4 ms each), and polling 10 times a second
 * took a tenth of the RL example's CPU. A lost SHUTDOWN_ASKED costs at most
 * this much delay.
 */
export const WAITING_POLL_MS = 1_000;
/** How long the first round waits for status answers, ms; doubled after a round that missed one, up to 2 s. */
const FIRST_ANSWER_MS = 250;

/** Waits for the static group's quiescence; rejects with RpcTimeoutError after `timeoutMs` (0 = never). */
export async function staticBarrier(self: BarrierParticipant, timeoutMs: number): Promise<void> {
  const deadline = timeoutMs > 0 ? Date.now() + timeoutMs : Infinity;
  let previous: string | undefined;
  /** The round now asked for is the confirmation of a quiet one, asked without a pause. */
  let confirming = false;
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
    // A first quiet round is confirmed by the next one at once: it starts after this one's answers
    // came, so a call that moved between them changes a counter whatever the time between (the
    // rounds are two waves of a four-counter check). Any other round pauses first.
    const confirmNow: boolean = key !== undefined && !confirming;
    confirming = confirmNow;
    previous = key;
    if (confirmNow) continue;
    // The least pause also bounds how often a member that keeps telling it asked can make this worker poll.
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    const waitingOn = [...snapshot].filter(([, status]) => status !== undefined && !status.requested).map(([name]) => name);
    if (waitingOn.length > 0) await self.pauseForAsk(Math.max(0, Math.min(WAITING_POLL_MS - POLL_MS, deadline - Date.now())), waitingOn);
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
        const nonce = toBase64url(fillRandom(new Uint8Array(12)));
        const reply = await self.request(name, { k: SHUTDOWN_STATUS, from: self.name, c: nonce }, timeoutMs);
        return openStatus(self, name, nonce, reply);
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
