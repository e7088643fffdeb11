/**
 * `tensorbus status`: lists the workers of a namespace by asking them, with
 * what each one's stats query answers (docs/observability.md) as tables:
 * the workers, the functions they serve and call, and recent events.
 * @module
 */
import type { Transport } from '@tensorbus/core';
import { loadNatsTransport } from '../nats-loader.js';
import { MemberWitness } from '../observe/member-witness.js';
import { readWorkers } from '../observe/stats-reader.js';
import type { FunctionStats, WorkerStats } from '../observe/stats-protocol.js';
import { formatBytes, formatTable, formatUptime } from './table.js';
import type { StatusArgs } from './args.js';

/** A worker as `status` lists it: its name and id, and its stats when it answered the stats query. */
export interface WorkerStatus {
  name: string;
  id: number;
  stats?: WorkerStats;
}

/** Seconds over which `status` shows rates. */
const RATE_WINDOW_S = 10;
/** A worker that answered is waited for on the members subject until this long after the start at most, ms (4 default heartbeats). */
const WITNESS_WAIT_MS = 2_000;

/** Connects to the namespace as a plain client (not a member). */
export async function connectReader(server: string | undefined, namespace: string | undefined, name: string): Promise<Transport> {
  if (!server) throw new Error('no server: pass --server nats://host:port or set NATS_URL');
  const { natsTransport } = await loadNatsTransport('`tensorbus status` and `tensorbus dashboard` talk to NATS', 'where @tensorbus/actors is installed');
  return natsTransport({ servers: server.split(','), namespace, name });
}

/**
 * Asks every worker of the namespace to answer within `waitMs`, then each one
 * for its stats; lists only members (answers signed with the key each one is
 * heard announcing on the members subject: member-witness.ts).
 */
export async function listWorkers(args: StatusArgs): Promise<WorkerStatus[]> {
  const transport = await connectReader(args.server, args.namespace, 'tensorbus-status');
  const witness = new MemberWitness(transport);
  try {
    const workers = await readWorkers(transport, witness, {
      waitMs: args.waitMs,
      witnessMs: Math.max(args.waitMs, WITNESS_WAIT_MS),
      window: RATE_WINDOW_S,
      statsTimeoutMs: Math.max(args.waitMs, 1_000),
    });
    return workers.map(({ name, id, stats }) => (stats ? { name, id, stats } : { name, id }));
  } finally {
    witness.close();
    await transport.close();
  }
}

/** Calls per second, mean latency (ms) and errors of `functions` over the last `seconds`. */
export function rates(functions: FunctionStats[], seconds: number, nowS = Math.floor(Date.now() / 1000)): { perSecond: number; meanMs: number; errors: number; calls: number } {
  let calls = 0;
  let errors = 0;
  let totalMs = 0;
  for (const f of functions) {
    for (const [second, c, e, ms] of f.buckets) {
      if (second <= nowS - seconds) continue;
      calls += c;
      errors += e;
      totalMs += ms;
    }
  }
  return { perSecond: calls / seconds, meanMs: calls > 0 ? totalMs / calls : 0, errors, calls };
}

/** The status report as text (tables). */
export function formatStatus(workers: WorkerStatus[], where: string): string {
  if (workers.length === 0) return `no workers in ${where}\n`;
  const lines = [`${workers.length} worker(s) in ${where}`];
  lines.push(
    formatTable(
      ['id', 'name', 'host', 'pid', 'uptime', 'backend', 'transport', 'calls/s', 'ms', 'errors', 'in flight', 'rrefs o/u', 'contexts', 'tensors', 'tensor mem', 'rss'],
      workers.map(({ id, name, stats: s }) => {
        if (s === undefined) return [String(id), name, '(no stats answer)'];
        const served = rates(s.served, RATE_WINDOW_S);
        const errors = Object.values(s.errors).reduce((n, e) => n + e, 0);
        return [
          String(id), name, s.host, String(s.pid), formatUptime(s.uptimeS), s.backend, s.transport,
          served.perSecond.toFixed(1), served.meanMs.toFixed(2), String(errors), String(s.inFlight),
          `${s.rrefs.owned}/${s.rrefs.used}`, String(s.contexts), String(s.tensors), formatBytes(s.tensorBytes), formatBytes(s.rssBytes),
        ];
      }),
    ),
  );
  const functionRows: string[][] = [];
  for (const { name, stats: s } of workers) {
    if (s === undefined) continue;
    for (const [side, list] of [['served', s.served], ['made', s.made]] as const) {
      for (const f of list) {
        const r = rates([f], RATE_WINDOW_S);
        functionRows.push([name, side, f.fn, r.perSecond.toFixed(1), r.meanMs.toFixed(2), String(r.errors), String(f.total)]);
      }
    }
  }
  if (functionRows.length > 0) {
    lines.push('', `functions (rates over the last ${RATE_WINDOW_S} s; totals since the first stats query)`);
    lines.push(formatTable(['worker', 'side', 'function', 'calls/s', 'ms', 'errors', 'total'], functionRows));
  }
  const errorRows = workers.flatMap(({ name, stats: s }) => (s ? Object.entries(s.errors).map(([code, n]) => [name, code, String(n)]) : []));
  if (errorRows.length > 0) lines.push('', 'errors by code', formatTable(['worker', 'code', 'count'], errorRows));
  const reportedRows = workers.flatMap(({ name, stats: s }) => (s ? Object.entries(s.reported).map(([stat, v]) => [name, stat, String(Number(v.toPrecision(6)))]) : []));
  if (reportedRows.length > 0) lines.push('', 'reported', formatTable(['worker', 'stat', 'value'], reportedRows));
  const events = new Map<string, { at: number; kind: string; worker: string }>();
  for (const { stats: s } of workers) for (const e of s?.events ?? []) events.set(`${e.kind} ${e.worker} ${Math.round(e.at / 1000)}`, e);
  if (events.size > 0) {
    const recent = [...events.values()].sort((a, b) => a.at - b.at).slice(-20);
    lines.push('', 'events', formatTable(['time', 'event', 'worker'], recent.map((e) => [new Date(e.at).toISOString().slice(11, 19), e.kind, e.worker])));
  }
  return `${lines.join('\n')}\n`;
}

/** Prints the workers as tables; returns the exit code. */
export async function status(args: StatusArgs): Promise<number> {
  const workers = await listWorkers(args);
  process.stdout.write(formatStatus(workers, `namespace ${args.namespace ?? '(default)'} on ${args.server}`));
  return 0;
}
