/**
 * What one worker keeps of its own activity for the stats query: call
 * rings (served and made), errors by code, the route last used to each peer,
 * recent membership events and the values the application reports. Every
 * table is bounded; nothing here is written while nobody observes (the call
 * path's switch is off), except membership events, which are rare.
 * @module
 */
import type { AgentHost } from '../agent/host.js';
import { CallRings } from './call-rings.js';

/** Membership events kept per worker. */
export const MAX_EVENTS = 100;
/** Error codes counted separately; further ones are counted under `OTHER`. */
export const MAX_ERROR_CODES = 64;
/** Peers whose route is remembered. */
export const MAX_ROUTES = 256;
/** Application values (see `reportStat`) kept per worker. */
export const MAX_REPORTED = 64;

/** A membership event as the stats query reports it. */
export interface WorkerEvent {
  /** Unix ms. */
  at: number;
  kind: 'join' | 'leave' | 'fail' | 'restart';
  worker: string;
}

/** The observations of one worker. */
export class WorkerObservations {
  /** Calls this worker served, per function. */
  readonly served = new CallRings();
  /** Calls this worker made, per function. */
  readonly made = new CallRings();
  /** Failed calls (made or served) by error code. */
  readonly errors = new Map<string, number>();
  /** The route the last call to each peer took. */
  readonly routes = new Map<string, string>();
  /** Recent joins, leaves and failures, oldest first. */
  readonly events: WorkerEvent[] = [];
  /** Values the application reported (`reportStat`), by name. */
  readonly reported = new Map<string, number>();
  /** How many times a value was reported: a snapshot made at a lower count misses the latest. */
  reports = 0;
  /** Unix ms when the worker started. */
  readonly startedAt = Date.now();

  constructor(readonly host: AgentHost) {}

  /** Counts a failed call's code. */
  failed(code: string): void {
    const key = this.errors.has(code) || this.errors.size < MAX_ERROR_CODES ? code : 'OTHER';
    this.errors.set(key, (this.errors.get(key) ?? 0) + 1);
  }

  /** Remembers the route a call to `peer` took. */
  routed(peer: string, route: string): void {
    if (this.routes.size >= MAX_ROUTES && !this.routes.has(peer)) return;
    this.routes.set(peer, route);
  }

  /** Records a membership event. */
  event(kind: WorkerEvent['kind'], worker: string): void {
    this.events.push({ at: Date.now(), kind, worker });
    if (this.events.length > MAX_EVENTS) this.events.splice(0, this.events.length - MAX_EVENTS);
  }

  /** Sets an application value; refused past {@link MAX_REPORTED} names. */
  report(name: string, value: number): boolean {
    if (!this.reported.has(name) && this.reported.size >= MAX_REPORTED) return false;
    this.reported.set(name, value);
    this.reports++;
    return true;
  }
}

/** The observations of each running worker of this process. */
const byHost = new WeakMap<AgentHost, WorkerObservations>();
/** The running workers (for metrics read on collection). */
export const liveWorkers = new Set<WorkerObservations>();

/** The observations of `host` (undefined for a bare client, or a worker not started). */
export function observationsOf(host: AgentHost | undefined): WorkerObservations | undefined {
  return host === undefined ? undefined : byHost.get(host);
}

/** Starts keeping observations for `host`. */
export function observe(host: AgentHost): WorkerObservations {
  const observations = new WorkerObservations(host);
  byHost.set(host, observations);
  liveWorkers.add(observations);
  return observations;
}

/** Stops: `host` stopped. */
export function forget(host: AgentHost): void {
  const observations = byHost.get(host);
  if (observations !== undefined) liveWorkers.delete(observations);
}
