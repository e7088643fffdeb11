/**
 * What the dashboard shows, gathered from the namespace through the same
 * queries `tensorbus status` makes (the membership query and each worker's
 * stats query, stats-reader.ts). It polls only while somebody watches, so
 * workers measure nothing on the dashboard's account when nobody does.
 *
 * Only members are shown: a worker's answers count when signed with the key
 * it is heard announcing on the members subject (member-witness.ts), so a
 * bus client that answers the queries cannot add a worker or figures.
 *
 * A worker missing from a poll that was heard saying goodbye (its signed
 * `bye` on the members subject) is shown as left; one missing from
 * {@link MISSES_BEFORE_GONE} polls in a row, or named by another worker's
 * leave/fail event, is shown as departed.
 * @module
 */
import type { Transport } from '@tensorbus/core';
import { MemberWitness } from '@tensorbus/actors/internal';
import { listWorkers, queryStats } from '@tensorbus/actors/internal';
import type { WorkerStats } from '@tensorbus/actors/internal';

/** Polls a worker may miss before it is shown as gone. */
export const MISSES_BEFORE_GONE = 3;
/** Points of history kept per reported value. */
export const HISTORY_POINTS = 600;
/** Departed workers kept on the page. */
export const MAX_DEPARTED = 100;
/** Events kept. */
export const MAX_EVENTS = 200;
/** Seconds of call history asked of each worker. */
export const WINDOW_S = 120;
/** Until the collector has listened to the members subject this long, a poll waits for the workers that answered to be heard there, ms (4 default heartbeats). */
export const WITNESS_WAIT_MS = 2_000;

/** A worker as the page shows it. */
export interface DashboardWorker {
  name: string;
  id: number;
  state: 'up' | 'left' | 'failed' | 'gone';
  /** Unix ms of the last answer. */
  lastSeen: number;
  stats: WorkerStats | undefined;
  /** Reported values over time: name -> [unix ms, value][]. */
  history: Record<string, Array<[number, number]>>;
}

/** A membership event as the page lists it. */
export interface DashboardEvent {
  at: number;
  kind: 'join' | 'leave' | 'fail' | 'gone' | 'restart';
  worker: string;
}

/** One update of the page. */
export interface DashboardState {
  namespace: string;
  server: string;
  at: number;
  workers: DashboardWorker[];
  events: DashboardEvent[];
}

interface Tracked extends DashboardWorker {
  misses: number;
  /** The key its answers are signed with. */
  signKey: string;
}

/** Polls the namespace and keeps the page's state. */
export class Collector {
  private readonly workers = new Map<string, Tracked>();
  private readonly events: DashboardEvent[] = [];
  private readonly eventKeys = new Set<string>();
  private polling = false;
  private readonly witness: MemberWitness;
  /** Workers present at the first poll were there already: no join events for them. */
  private first = true;

  constructor(private readonly transport: Transport, private readonly where: { namespace: string; server: string }, private readonly waitMs = 500) {
    this.witness = new MemberWitness(transport);
  }

  /** Stops listening to the members subject. */
  close(): void {
    this.witness.close();
  }

  /** Polls once: who is there, and what each one says. */
  async poll(): Promise<DashboardState> {
    if (this.polling) return this.state();
    this.polling = true;
    try {
      const answered = await listWorkers(this.transport, this.waitMs);
      await this.witness.waitFor(answered, WITNESS_WAIT_MS);
      const listed = answered.filter((w) => this.witness.vouches(w.name, w.signKey));
      // A worker up at the last poll that was late to the membership query is asked too: only silence on both counts as a miss.
      const late = [...this.workers.values()]
        .filter((w) => w.state === 'up' && !listed.some((l) => l.name === w.name) && this.witness.vouches(w.name, w.signKey))
        .map((w) => ({ name: w.name, id: w.id, signKey: w.signKey }));
      const asked = [...listed, ...late];
      const answers = await Promise.all(asked.map((w) => queryStats(this.transport, w, WINDOW_S, 1_000)));
      const seen = asked.filter((w, i) => i < listed.length || answers[i] !== undefined);
      const stats = answers.filter((_, i) => i < listed.length || answers[i] !== undefined);
      const now = Date.now();
      const present = new Set<string>();
      seen.forEach((w, i) => {
        present.add(w.name);
        let tracked = this.workers.get(w.name);
        if (tracked === undefined || tracked.state !== 'up') {
          if (!this.first) this.event({ at: now, kind: 'join', worker: w.name });
          tracked = { name: w.name, id: w.id, state: 'up', lastSeen: now, stats: undefined, history: tracked?.history ?? {}, misses: 0, signKey: w.signKey };
          this.workers.set(w.name, tracked);
        }
        tracked.signKey = w.signKey;
        tracked.id = w.id;
        tracked.misses = 0;
        tracked.lastSeen = now;
        const s = stats[i];
        if (s !== undefined) {
          tracked.stats = s;
          for (const [stat, value] of Object.entries(s.reported)) this.remember(tracked, stat, now, value);
          for (const e of s.events) {
            if (e.kind === 'join') continue;
            this.event(e);
            // A restart is listed; the worker's state is what this poll saw of it.
            if (e.kind === 'restart') continue;
            const other = this.workers.get(e.worker);
            // A peer's word says how a worker went: it refines 'gone' (silence seen here) into left or failed.
            if (other !== undefined && (other.state === 'up' || other.state === 'gone') && !present.has(e.worker) && e.at >= other.lastSeen - 1_000) other.state = e.kind === 'leave' ? 'left' : 'failed';
          }
        }
      });
      for (const tracked of this.workers.values()) {
        if (present.has(tracked.name) || tracked.state !== 'up') continue;
        // Its own signed goodbye, heard on the members subject: the last worker to leave has no peer to report it.
        if (this.witness.saidBye(tracked.name, tracked.signKey)) {
          tracked.state = 'left';
          if (!this.events.some((e) => e.kind === 'leave' && e.worker === tracked.name && e.at >= tracked.lastSeen - 1_000)) this.event({ at: now, kind: 'leave', worker: tracked.name });
          continue;
        }
        if (++tracked.misses >= MISSES_BEFORE_GONE) {
          tracked.state = 'gone';
          this.event({ at: now, kind: 'gone', worker: tracked.name });
        }
      }
      this.dropOldDeparted();
      this.first = false;
      return this.state();
    } finally {
      this.polling = false;
    }
  }

  /** The page's state now. */
  state(): DashboardState {
    const workers = [...this.workers.values()]
      .map(({ misses: _misses, signKey: _signKey, ...w }) => w)
      .sort((a, b) => (a.state === 'up') === (b.state === 'up') ? a.id - b.id || (a.name < b.name ? -1 : 1) : a.state === 'up' ? -1 : 1);
    return { ...this.where, at: Date.now(), workers, events: [...this.events] };
  }

  private remember(worker: Tracked, stat: string, at: number, value: number): void {
    const series = (worker.history[stat] ??= []);
    const last = series[series.length - 1];
    // One point per change (and at most one per poll): a flat value adds nothing.
    if (last !== undefined && last[1] === value) return;
    series.push([at, value]);
    if (series.length > HISTORY_POINTS) series.splice(0, series.length - HISTORY_POINTS);
  }

  private event(e: DashboardEvent): void {
    const key = `${e.kind} ${e.worker} ${Math.floor(e.at / 5_000)}`;
    if (this.eventKeys.has(key)) return;
    // A leave reported by a peer and seen as 'gone' here is one departure.
    if (e.kind === 'gone' && this.events.some((x) => (x.kind === 'leave' || x.kind === 'fail') && x.worker === e.worker && e.at - x.at < 60_000)) return;
    this.eventKeys.add(key);
    // And a 'gone' seen here first is replaced by the peer's word when it comes.
    if (e.kind === 'leave' || e.kind === 'fail') {
      const silence = this.events.findIndex((x) => x.kind === 'gone' && x.worker === e.worker && Math.abs(x.at - e.at) < 60_000);
      if (silence >= 0) this.events.splice(silence, 1);
    }
    this.events.push(e);
    this.events.sort((a, b) => a.at - b.at);
    if (this.events.length > MAX_EVENTS) this.events.splice(0, this.events.length - MAX_EVENTS);
    if (this.eventKeys.size > MAX_EVENTS * 4) {
      this.eventKeys.clear();
      for (const x of this.events) this.eventKeys.add(`${x.kind} ${x.worker} ${Math.floor(x.at / 5_000)}`);
    }
  }

  private dropOldDeparted(): void {
    const departed = [...this.workers.values()].filter((w) => w.state !== 'up').sort((a, b) => a.lastSeen - b.lastSeen);
    for (const w of departed.slice(0, Math.max(0, departed.length - MAX_DEPARTED))) this.workers.delete(w.name);
  }
}
