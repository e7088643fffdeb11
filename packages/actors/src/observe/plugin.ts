/**
 * The observe plugin: keeps this worker's observations (observe/), answers
 * the stats query on the control channel, records membership events, and
 * keeps the call path's switch fresh while the worker runs. See
 * docs/observability.md.
 * @module
 */
import type { Subscription } from 'rxjs';
import { PluginKey, type AgentHost, type PluginLifecycle, type ProtocolPlugin } from '../agent/host.js';
import { StatsResponder } from './stats-responder.js';
import { nonceOf, STATS, STATS_CONTROL_KINDS, windowOf } from './stats-protocol.js';
import { instrumentsNow } from './instruments.js';
import { agentStarted, agentStopped, observing, onRefresh } from './switch.js';
import { forget, observe, type WorkerObservations } from './worker-observations.js';

/** A worker asked for stats this recently is watched (the dashboard asks every second while a page is open), ms. */
export const WATCHED_MS = 5_000;
/** Longest a leaving worker waits for the query that takes its last values, ms. */
export const LAST_ANSWER_WAIT_MS = 3_000;

/** One worker's observing. */
export class WorkerObserving implements PluginLifecycle {
  readonly observations: WorkerObservations;
  readonly stats: StatsResponder;
  private readonly subscriptions: Subscription[] = [];
  private started = false;

  constructor(private readonly host: AgentHost) {
    this.observations = observe(host);
    this.stats = new StatsResponder(host, this.observations);
    host.onControl(STATS, (message) => this.stats.answer(windowOf(message), nonceOf(message)));
  }

  async whenRunning(): Promise<void> {
    this.started = true;
    agentStarted();
    let known = new Set(this.host.members.list().map((w) => w.name));
    this.subscriptions.push(
      this.host.members.membership$.subscribe((members) => {
        const now = new Set(members.map((w) => w.name));
        for (const name of now) if (!known.has(name)) this.observations.event('join', name);
        known = now;
      }),
      this.host.members.gone$.subscribe(({ name, reason }) => this.observations.event(reason === 'left' ? 'leave' : 'fail', name)),
      // A new incarnation under a name that left or failed: a restarted worker.
      this.host.members.rejoined$.subscribe((name) => this.observations.event('restart', name)),
    );
  }

  /** A watched worker's last reported values reach its watchers before it leaves (StatsResponder.lastAnswer). */
  async beforeLeave(timeoutMs: number): Promise<void> {
    // A timeout of 0 bounds nothing; this wait has its own bound.
    await this.stats.lastAnswer(WATCHED_MS, timeoutMs > 0 ? Math.min(timeoutMs, LAST_ANSWER_WAIT_MS) : LAST_ANSWER_WAIT_MS);
  }

  stopped(): void {
    for (const subscription of this.subscriptions.splice(0)) subscription.unsubscribe();
    forget(this.host);
    if (this.started) agentStopped();
    this.started = false;
  }
}

// The gauges of running workers exist as soon as a meter provider is registered, before any call.
onRefresh(() => {
  if (observing.metering) instrumentsNow();
});

/** The key of the observe plugin. */
export const OBSERVE = new PluginKey<WorkerObserving>('observe');

/** The observe protocol: the stats query. */
export const observePlugin: ProtocolPlugin<WorkerObserving> = {
  key: OBSERVE,
  kinds: STATS_CONTROL_KINDS,
  functions: [],
  install: (host) => new WorkerObserving(host),
};
