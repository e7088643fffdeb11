/**
 * The stats query: a control message `{ k: 'stats', w, n }` to a worker's
 * control subject (`tb.ctl.<name>`), answered with a {@link WorkerStats}
 * snapshot, encoded and signed by the worker's membership key together with
 * the asker's nonce `n`. Anyone connected to the namespace may ask (no
 * membership needed: `tensorbus status` and the dashboard are plain
 * clients); the asker believes an answer only when it is signed, for its
 * nonce, by the key the name's member announces (member-witness.ts), so
 * another bus client cannot answer for a worker, or make one up. Each side
 * checks what it receives: the worker bounds `w` and `n`, the reader checks
 * the signature, then the snapshot's shape and sizes, before using it.
 *
 *   query: { k: 'stats', w: seconds of history (1..300, default 60), n: nonce (16..64 base64url characters) }
 *   reply: { s: bytes of the encoded WorkerStats, sig: Ed25519 signature of statsSignedText(n, s) }
 *                                          (or nothing, beyond the rate limit)
 * @module
 */
import { sha256, toBase64url } from '../platform/crypto.js';
import { RING_SECONDS } from './call-rings.js';
import type { WorkerResources } from './resources.js';
import { MAX_ERROR_CODES, MAX_EVENTS, MAX_REPORTED, MAX_ROUTES, type WorkerEvent } from './worker-observations.js';

/** The control kind of the stats query. */
export const STATS = 'stats';
/** The control kinds of the observe plugin. */
export const STATS_CONTROL_KINDS: readonly string[] = [STATS];
/** Seconds of history a query gets unless it asks otherwise. */
export const DEFAULT_WINDOW_S = 60;
/** Functions listed per side in a snapshot (the busiest). */
export const MAX_LISTED_FUNCTIONS = 32;
/** Snapshots a worker makes per second at most; further queries get the last one. */
export const SNAPSHOTS_PER_SECOND = 4;
/** Replies a worker sends per second at most; further queries are dropped (the asker times out). */
export const REPLIES_PER_SECOND = 50;

/** One second of one function: `[unix second, calls, errors, summed ms, longest ms]`. */
export type WireBucket = [number, number, number, number, number];

/** One function's recent calls. */
export interface FunctionStats {
  fn: string;
  /** Calls since this worker began observing. */
  total: number;
  buckets: WireBucket[];
}

/** What a worker answers to a stats query: who it is, its calls, and its resources (resources.ts). */
export interface WorkerStats extends WorkerResources {
  v: 1;
  name: string;
  id: number;
  host: string;
  pid: number;
  /** Unix ms when the worker started; and seconds since. */
  startedAt: number;
  uptimeS: number;
  /** The tfjs backend (tensorBackend()). */
  backend: string;
  /** The transport's kind, and the route the last call to each peer took. */
  transport: string;
  routes: Record<string, string>;
  /** Members this worker sees. */
  members: string[];
  /** Seconds of history in `served` and `made`. */
  window: number;
  served: FunctionStats[];
  made: FunctionStats[];
  /** Failed calls (made or served) by error code, since observing began. */
  errors: Record<string, number>;
  /** Recent joins, leaves and failures this worker saw. */
  events: WorkerEvent[];
  /** Values the application reported (`reportStat`). */
  reported: Record<string, number>;
}

/** A signed answer to the stats query. */
export interface SignedStats {
  /** The snapshot, encoded (the codec's frame of a value without tensors). */
  s: Uint8Array;
  /** The worker's Ed25519 signature of {@link statsSignedText}. */
  sig: string;
}

const NONCE_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;

/** The query's nonce: `n` when it is 16..64 base64url characters, else the empty string (an answer then proves nothing fresh). */
export function nonceOf(message: { [field: string]: unknown }): string {
  return typeof message.n === 'string' && NONCE_PATTERN.test(message.n) ? message.n : '';
}

/** What a stats answer's signature covers: the asker's nonce and the SHA-256 of the snapshot's bytes. */
export function statsSignedText(nonce: string, snapshot: Uint8Array): string {
  return `tensorbus stats\0${nonce}\0${toBase64url(sha256(snapshot))}`;
}

/** The history a query asks for, bounded: `w` seconds when it is an integer in 1..300, else the default. */
export function windowOf(message: { [field: string]: unknown }): number {
  const w = message.w;
  return typeof w === 'number' && Number.isInteger(w) && w >= 1 && w <= RING_SECONDS ? w : DEFAULT_WINDOW_S;
}

const isCount = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0;
const isText = (s: unknown, max = 256): s is string => typeof s === 'string' && s.length <= max;
const isRecordOf = (o: unknown, check: (v: unknown) => boolean, max: number): o is Record<string, never> =>
  typeof o === 'object' && o !== null && !Array.isArray(o) && Object.keys(o).length <= max && Object.entries(o).every(([k, v]) => k.length <= 128 && check(v));

function isFunctionStats(f: unknown): f is FunctionStats {
  const s = f as FunctionStats;
  return (
    typeof s === 'object' && s !== null && isText(s.fn) && isCount(s.total) && Array.isArray(s.buckets) && s.buckets.length <= RING_SECONDS &&
    s.buckets.every((b) => Array.isArray(b) && b.length === 5 && b.every(isCount))
  );
}

/**
 * The snapshot `value` is, or undefined when it is not one (a reply comes
 * from the network: every field is checked for type and size).
 */
export function checkWorkerStats(value: unknown): WorkerStats | undefined {
  const s = value as WorkerStats;
  if (typeof s !== 'object' || s === null || s.v !== 1) return undefined;
  const ok =
    isText(s.name, 127) && Number.isSafeInteger(s.id) && isText(s.host) && isCount(s.pid) && isCount(s.startedAt) && isCount(s.uptimeS) &&
    isText(s.backend, 32) && isText(s.transport, 32) && isRecordOf(s.routes, (r) => isText(r, 32), MAX_ROUTES) &&
    Array.isArray(s.members) && s.members.length <= 10_000 && s.members.every((m) => isText(m, 127)) &&
    isCount(s.window) && Array.isArray(s.served) && s.served.length <= MAX_LISTED_FUNCTIONS && s.served.every(isFunctionStats) &&
    Array.isArray(s.made) && s.made.length <= MAX_LISTED_FUNCTIONS && s.made.every(isFunctionStats) &&
    isRecordOf(s.errors, isCount, MAX_ERROR_CODES + 1) && isCount(s.inFlight) && typeof s.rrefs === 'object' && s.rrefs !== null && isCount(s.rrefs.owned) && isCount(s.rrefs.used) &&
    isCount(s.contexts) && isCount(s.tensors) && isCount(s.tensorBytes) && isCount(s.wasmHeapBytes) && isCount(s.rssBytes) && isCount(s.heapUsedBytes) &&
    Array.isArray(s.events) && s.events.length <= MAX_EVENTS &&
    s.events.every((e) => typeof e === 'object' && e !== null && isCount(e.at) && (e.kind === 'join' || e.kind === 'leave' || e.kind === 'fail' || e.kind === 'restart') && isText(e.worker, 127)) &&
    isRecordOf(s.reported, (v) => typeof v === 'number' && Number.isFinite(v), MAX_REPORTED);
  return ok ? s : undefined;
}
