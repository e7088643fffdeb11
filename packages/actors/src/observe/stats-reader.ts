/**
 * The reading side of the stats query, for clients that are not members
 * (`tensorbus status`, the dashboard): who is in the namespace (the
 * membership query), and each worker's stats. Every answer is checked before
 * use: a membership answer must be a `here` signed by the key it carries,
 * and a stats answer signed by that key for this reader's nonce
 * (stats-protocol.ts); which keys belong to members, member-witness.ts says.
 * @module
 */
import { fillRandom, toBase64url } from '../platform/crypto.js';
import { processId } from '../platform/process.js';
import { defaultCodec, type Transport } from '@tensorbus/core';
import { controlSubject, MEMBERS_SUBJECT } from '../agent/subjects.js';
import { Identity } from '../agent/identity.js';
import { HERE, QUERY, type Announcement } from '../membership/membership-protocol.js';
import { decodeWithoutTensors } from '../tensors.js';
import { MemberWitness, signedAnnouncement } from './member-witness.js';
import { checkWorkerStats, STATS, statsSignedText, type WorkerStats } from './stats-protocol.js';

/** A worker that answered the membership query, and the key it signed with. */
export interface WorkerSeen {
  name: string;
  id: number;
  signKey: string;
}

/** Workers a reader lists at most (answers beyond are ignored). */
export const MAX_WORKERS_LISTED = 10_000;
/** Bytes of a stats answer a reader takes at most (a snapshot's bounds make it far smaller). */
export const MAX_STATS_BYTES = 4 * 1024 * 1024;

let queries = 0;
let verifier: Identity | undefined;

/**
 * Asks every worker of `transport`'s namespace who it is; resolves after
 * `waitMs` with those that answered with a signed `here` (a name answered
 * with two keys is left out: which one is the member's, the witness decides).
 */
export async function listWorkers(transport: Transport, waitMs: number): Promise<WorkerSeen[]> {
  verifier ??= new Identity();
  const found = new Map<string, WorkerSeen | null>();
  const inbox = `tb.status.${processId()}.${Date.now()}x${++queries}`;
  const subscription = transport.subscribe(inbox, (message) => {
    try {
      const here = decodeWithoutTensors(message.data) as Announcement;
      if (here?.k !== HERE || (!found.has(here.n) && found.size >= MAX_WORKERS_LISTED) || !signedAnnouncement(here, verifier!)) return;
      const before = found.get(here.n);
      if (before === undefined) found.set(here.n, { name: here.n, id: here.id, signKey: here.sk });
      else if (before !== null && before.signKey !== here.sk) found.set(here.n, null);
    } catch {
      // Not an answer: ignore.
    }
  });
  try {
    await transport.flush();
    transport.publish(MEMBERS_SUBJECT, defaultCodec.encode({ k: QUERY, reply: inbox }));
    await new Promise((resolve) => setTimeout(resolve, waitMs));
  } finally {
    subscription.unsubscribe();
  }
  return [...found.values()].filter((w): w is WorkerSeen => w !== null).sort((a, b) => a.id - b.id || (a.name < b.name ? -1 : 1));
}

/**
 * Asks `worker` for its stats over the last `window` seconds; undefined when
 * it does not answer within `timeoutMs` (gone, or over its rate limit) or
 * answers with anything but a snapshot of itself signed, for this query, by
 * `worker.signKey`.
 */
export async function queryStats(transport: Transport, worker: { name: string; signKey: string }, window = 60, timeoutMs = 1_000): Promise<WorkerStats | undefined> {
  verifier ??= new Identity();
  const nonce = toBase64url(fillRandom(new Uint8Array(18)));
  try {
    const reply = await transport.request(controlSubject(worker.name), defaultCodec.encode({ k: STATS, w: window, n: nonce }), { timeoutMs });
    const signed = decodeWithoutTensors(reply) as { s?: unknown; sig?: unknown };
    if (!(signed?.s instanceof Uint8Array) || signed.s.byteLength > MAX_STATS_BYTES) return undefined;
    if (!verifier.verify(worker.signKey, statsSignedText(nonce, signed.s), signed.sig)) return undefined;
    const stats = checkWorkerStats(decodeWithoutTensors(signed.s));
    return stats?.name === worker.name ? stats : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The workers of the namespace a reader may show, with their stats: those
 * that answered the membership query (within `waitMs`) with a key `witness`
 * heard them announce (waiting for that until the witness has listened for `witnessMs`),
 * each with its signed stats, or none when it gave no valid answer.
 */
export async function readWorkers(
  transport: Transport,
  witness: MemberWitness,
  options: { waitMs: number; witnessMs: number; window: number; statsTimeoutMs: number },
): Promise<Array<WorkerSeen & { stats: WorkerStats | undefined }>> {
  const listed = await listWorkers(transport, options.waitMs);
  await witness.waitFor(listed, options.witnessMs);
  const members = listed.filter((w) => witness.vouches(w.name, w.signKey));
  const stats = await Promise.all(members.map((w) => queryStats(transport, w, options.window, options.statsTimeoutMs)));
  return members.map((w, i) => ({ ...w, stats: stats[i] }));
}
