/**
 * The reading side of the stats query, for clients that are not members
 * (`tensorbus status`, the dashboard): who is in the namespace (the
 * membership query `tensorbus status` always used), and each worker's stats.
 * Every answer is checked before use (stats-protocol.ts).
 * @module
 */
import { defaultCodec, type Transport } from '@tensorbus/core';
import { controlSubject, MEMBERS_SUBJECT } from '../agent/subjects.js';
import { QUERY } from '../membership/membership-protocol.js';
import { decodeWithoutTensors } from '../tensors.js';
import { isWorkerName } from '../agent/wire-checks.js';
import { checkWorkerStats, STATS, type WorkerStats } from './stats-protocol.js';

/** A worker that answered the membership query. */
export interface WorkerSeen {
  name: string;
  id: number;
}

/** Workers a reader lists at most (answers beyond are ignored). */
export const MAX_WORKERS_LISTED = 10_000;

let queries = 0;

/** Asks every worker of `transport`'s namespace who it is; resolves after `waitMs` with those that answered. */
export async function listWorkers(transport: Transport, waitMs: number): Promise<WorkerSeen[]> {
  const found = new Map<string, WorkerSeen>();
  const inbox = `tb.status.${process.pid}.${Date.now()}x${++queries}`;
  const subscription = transport.subscribe(inbox, (message) => {
    try {
      const here = decodeWithoutTensors(message.data) as { n?: unknown; id?: unknown };
      if (isWorkerName(here.n) && Number.isSafeInteger(here.id) && (found.has(here.n) || found.size < MAX_WORKERS_LISTED)) found.set(here.n, { name: here.n, id: here.id as number });
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
  return [...found.values()].sort((a, b) => a.id - b.id || (a.name < b.name ? -1 : 1));
}

/**
 * Asks worker `name` for its stats over the last `window` seconds; undefined
 * when it does not answer within `timeoutMs` (gone, or over its rate limit)
 * or answers with something that is not a snapshot of itself.
 */
export async function queryStats(transport: Transport, name: string, window = 60, timeoutMs = 1_000): Promise<WorkerStats | undefined> {
  try {
    const reply = await transport.request(controlSubject(name), defaultCodec.encode({ k: STATS, w: window }), { timeoutMs });
    const stats = checkWorkerStats(decodeWithoutTensors(reply));
    return stats?.name === name ? stats : undefined;
  } catch {
    return undefined;
  }
}
