/**
 * A worker's answer to stats queries: a snapshot of its observations and
 * resources, made at most {@link SNAPSHOTS_PER_SECOND} times a second (later
 * queries within the same quarter second get the same snapshot), and sent at
 * most {@link REPLIES_PER_SECOND} times a second. The first query turns the
 * measuring of calls on for the next ten minutes (switch.ts): until then the
 * worker measured nothing, so the first snapshot's history is empty. Each
 * reply is signed for its asker's nonce (stats-protocol.ts): the snapshot is
 * encoded once, the signature made per reply. A watched worker leaving with
 * values its watchers have not seen yet waits for one more query
 * ({@link StatsResponder.lastAnswer}), so a run's last reported value reaches
 * the dashboard.
 * @module
 */
import { hostname, processId } from '../platform/process.js';
import { defaultCodec, tensorBackend } from '@tensorbus/core';
import type { AgentHost } from '../agent/host.js';
import type { SecondBucket } from './call-rings.js';
import { readResources } from './resources.js';
import { MAX_LISTED_FUNCTIONS, REPLIES_PER_SECOND, SNAPSHOTS_PER_SECOND, statsSignedText, type FunctionStats, type SignedStats, type WorkerStats } from './stats-protocol.js';
import { statsWatched } from './switch.js';
import type { WorkerObservations } from './worker-observations.js';

const wire = (list: Array<{ fn: string; total: number; buckets: SecondBucket[] }>): FunctionStats[] =>
  list.map(({ fn, total, buckets }) => ({ fn, total, buckets: buckets.map((b) => [b.second, b.calls, b.errors, b.totalMs, b.maxMs]) }));

/** Answers the stats queries of one worker. */
export class StatsResponder {
  /** Queries dropped over the rate limit. */
  dropped = 0;
  private last: { at: number; window: number; reports: number; stats: WorkerStats; bytes: Uint8Array } | undefined;
  private second = 0;
  private repliesThisSecond = 0;
  /** Unix ms of the last reply; 0 before any. */
  private answeredAt = 0;
  /** Settled by the next reply that carries every value reported so far. */
  private awaited: { reports: number; resolve(): void } | undefined;

  constructor(private readonly host: AgentHost, private readonly observations: WorkerObservations) {}

  /** The signed reply to a query for `window` seconds with `nonce`, or undefined when over the rate limit. */
  answer(window: number, nonce: string): SignedStats | undefined {
    statsWatched();
    const now = Date.now();
    const second = Math.floor(now / 1000);
    if (second !== this.second) {
      this.second = second;
      this.repliesThisSecond = 0;
    }
    if (++this.repliesThisSecond > REPLIES_PER_SECOND) {
      this.dropped++;
      return undefined;
    }
    const reports = this.observations.reports;
    const stale = this.awaited !== undefined && this.last !== undefined && this.last.reports < this.awaited.reports;
    if (this.last === undefined || this.last.window !== window || stale || now - this.last.at >= 1000 / SNAPSHOTS_PER_SECOND) {
      const stats = this.snapshot(window);
      this.last = { at: now, window, reports, stats, bytes: defaultCodec.encode(stats) };
    }
    this.answeredAt = now;
    const bytes = this.last.bytes;
    const answer = { s: bytes, sig: this.host.members.sign(statsSignedText(nonce, bytes)) };
    if (this.awaited && this.last.reports >= this.awaited.reports) this.awaited.resolve();
    return answer;
  }

  /**
   * Before the worker leaves: when it was asked for stats in the last
   * `watchedMs` (somebody watches) and has reported values since its last
   * reply, resolves once a reply carried them, or after `waitMs`; at once
   * otherwise.
   */
  async lastAnswer(watchedMs: number, waitMs: number): Promise<void> {
    const reports = this.observations.reports;
    if (Date.now() - this.answeredAt > watchedMs || (this.last?.reports ?? 0) >= reports) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await new Promise<void>((resolve) => {
      this.awaited = { reports, resolve };
      timer = setTimeout(resolve, waitMs);
    });
    clearTimeout(timer);
    this.awaited = undefined;
  }

  private snapshot(window: number): WorkerStats {
    const host = this.host;
    const o = this.observations;
    const self = host.members.self;
    return {
      v: 1,
      name: host.name,
      id: self.id,
      host: hostname(),
      pid: processId(),
      startedAt: o.startedAt,
      uptimeS: Math.round((Date.now() - o.startedAt) / 1000),
      backend: tensorBackend(),
      transport: host.transport.kind,
      routes: Object.fromEntries(o.routes),
      members: host.members.list().map((w) => w.name),
      window,
      served: wire(o.served.recent(window, MAX_LISTED_FUNCTIONS)),
      made: wire(o.made.recent(window, MAX_LISTED_FUNCTIONS)),
      errors: Object.fromEntries(o.errors),
      ...readResources(host),
      events: [...o.events],
      reported: Object.fromEntries(o.reported),
    };
  }
}
