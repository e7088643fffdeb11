/**
 * The one switch the call path reads: `observing.on` is true while anyone
 * looks at this process's calls (an OpenTelemetry tracer or meter provider is
 * registered, or a stats reader asked recently). While it is false the call
 * path pays one property read per call and nothing else.
 *
 * The OpenTelemetry API has no event for "a provider was registered": the
 * switch is refreshed when an agent starts, once a second while an agent
 * runs (an unref'd timer), and by {@link refreshObservability}.
 * @module
 */
import { createNoopMeter, metrics, ProxyTracerProvider, trace } from '@opentelemetry/api';
import { SCOPE } from './span-scope.js';
import { unrefTimer } from '../platform/process.js';

/** How long a stats query keeps this process's calls measured, ms. */
export const STATS_WATCH_MS = 10 * 60_000;
/** How often the switch re-reads the registered providers, ms. */
const REFRESH_MS = 1_000;

/** What is watching, read on every call (plain fields, no getters). */
export const observing = {
  /** Any of the others. */
  on: false,
  /** A tracer provider is registered: calls become spans. */
  tracing: false,
  /** A meter provider is registered: calls are counted in instruments. */
  metering: false,
  /** A stats query came within {@link STATS_WATCH_MS}: calls are counted in the per-second rings. */
  stats: false,
};

let statsUntil = 0;
/** Told after each refresh (the metrics make their instruments as soon as a meter provider is there). */
const refreshed: Array<() => void> = [];

/** Runs `hook` after every refresh of the switch. */
export function onRefresh(hook: () => void): void {
  refreshed.push(hook);
}
let timer: NodeJS.Timeout | undefined;
let agentsRunning = 0;

/** The API's no-op tracer provider (what a proxy without a delegate hands out) and no-op meter: the marks of "nothing registered", by identity (class names do not survive a minifier). */
const NOOP_TRACER_PROVIDER = new ProxyTracerProvider().getDelegate();
const NOOP_METER = createNoopMeter();

/**
 * Re-reads whether a tracer or meter provider is registered. Call it after
 * registering a provider to have calls traced at once (otherwise within a
 * second).
 *
 * @example
 * ```ts
 * trace.setGlobalTracerProvider(provider);
 * refreshObservability();
 * ```
 */
export function refreshObservability(): void {
  const tracerProvider = trace.getTracerProvider();
  const delegate = tracerProvider instanceof ProxyTracerProvider ? tracerProvider.getDelegate() : tracerProvider;
  observing.tracing = delegate !== NOOP_TRACER_PROVIDER;
  // The no-op provider's meters are the one no-op meter; a real provider makes (and keeps) its own.
  observing.metering = metrics.getMeterProvider().getMeter(SCOPE) !== NOOP_METER;
  observing.stats = Date.now() < statsUntil;
  observing.on = observing.tracing || observing.metering || observing.stats;
  for (const hook of refreshed) hook();
}

/** A stats query arrived: calls are measured for the next {@link STATS_WATCH_MS}. */
export function statsWatched(): void {
  statsUntil = Date.now() + STATS_WATCH_MS;
  if (!observing.stats) refreshObservability();
}

/** An agent starts: the switch is read now and kept fresh while any agent runs. */
export function agentStarted(): void {
  agentsRunning++;
  refreshObservability();
  if (timer === undefined) {
    timer = setInterval(refreshObservability, REFRESH_MS);
    unrefTimer(timer);
  }
}

/** An agent stopped: the timer goes with the last one. */
export function agentStopped(): void {
  agentsRunning = Math.max(0, agentsRunning - 1);
  if (agentsRunning === 0 && timer !== undefined) {
    clearInterval(timer);
    timer = undefined;
  }
}
