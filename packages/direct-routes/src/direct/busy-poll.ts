/**
 * Keeps this process's event loop polling for a short window after it sent
 * something on a direct route that is answered soon (a request, or a reply
 * to a peer that calls again at once), so the answer is read as it lands
 * instead of after the CPU has gone idle and been woken again.
 *
 * On the virtual machines this was measured on, a vCPU that halts takes tens
 * of microseconds to wake: more than a small call's whole work. While a
 * `setImmediate` is queued, libuv polls its sockets without blocking, so the
 * process never halts in the window. Polling through a long wait costs more
 * than the wakeup it saves (the spinning core is taken from the peer's
 * helper threads and everything else), so no window opens while answers
 * have been taking longer than {@link LONG_WAIT_SHARE} of the window on
 * average. Only answers that land in a window are timed: a wait without
 * polling is longer by the two wakeups polling saves, so timing those would
 * keep polling off for answers it would make quick, and an answer that does
 * not come in the window (a collector's pause, a long computation) is a miss,
 * handled below. While answers are slow, every {@link PROBE_EVERY}th send
 * still opens a window, to time them again. A
 * window whose answer does not come is a miss, and after
 * {@link MISSES_BEFORE_BACKOFF} misses in a row polling stops for a growing
 * number of sends (up to {@link MAX_SKIP}), and starts again after an answer
 * that lands inside a window. A process whose peers answer slowly (they
 * compute) so spends almost nothing on it. See docs/data-plane.md, "Busy
 * polling".
 *
 * Windows open only while this host has a core for every process that
 * polls ({@link HostPollers}, `host-pollers.ts`): when the processes outnumber
 * the cores (the RL example's five on two), a window takes the core a peer
 * is about to need, which the checks above cannot see from inside one
 * process, and the application is slower with polling than without. Two
 * processes on a machine with cores to spare (the no-op benchmark) gain from
 * it. On by default ({@link DEFAULT_BUSY_POLL_US});
 * `TENSORBUS_BUSY_POLL_US=0` or `direct: { busyPollUs: 0 }` turns it off.
 * @module
 */
import { performance } from 'node:perf_hooks';
import { InvalidArgumentError } from '@tensorbus/core';
import { HostPollers } from './host-pollers.js';

/** Default window, µs (`TENSORBUS_BUSY_POLL_US=0` turns polling off; see the module's comment). */
export const DEFAULT_BUSY_POLL_US = 500;
/**
 * No window opens while answers take, on average, longer than this share of
 * the window: polling through a wait that long costs the machine more CPU
 * than the wakeup it saves.
 */
export const LONG_WAIT_SHARE = 0.5;
/** Weight of the newest wait in the running average. */
const WAIT_WEIGHT = 0.25;
/** While answers take long, one send in this many still opens a window (to time them again). */
export const PROBE_EVERY = 16;
/** Longest window accepted, µs. */
export const MAX_BUSY_POLL_US = 10_000;
/** Windows in a row without an answer before polling backs off. */
export const MISSES_BEFORE_BACKOFF = 3;
/** Most sends skipped between two tries while backed off. */
export const MAX_SKIP = 1024;

/** Experiment knob (`npm run bench -- --experiment poll-backoff`): `=0` leaves out the backoff after misses. */
const BACKOFF = process.env.TENSORBUS_EXPERIMENT_POLL_BACKOFF !== '0';

/** What polling has done so far in this process (for tests and the benchmark). */
export interface BusyPollStats {
  /** Windows in which an answer landed (counted as it lands). */
  hits: number;
  /** Windows that ended without one. */
  misses: number;
  /** Sends that opened no window because polling was backed off. */
  skipped: number;
  /** Sends that opened no window because answers have been taking long (see {@link LONG_WAIT_SHARE}). */
  slow: number;
  /** Sends that opened no window because this host's polling processes outnumber its cores. */
  crowded: number;
}

/** Whether this host has a core for every process that polls (a {@link HostPollers}; a fake one in tests). */
export interface CoresSpare {
  spare(now: number): boolean;
}

/** The busy polling of one process (one event loop): see the module's comment. */
export class BusyPoll {
  private windowMs: number;
  private polling = false;
  private deadline = 0;
  /** An answer landed since the current window opened. */
  private answered = false;
  private missesInRow = 0;
  /** Sends to skip before the next window (while backed off), and the next skip. */
  private skipLeft = 0;
  /** The next backoff after misses (reset by a hit). */
  private nextSkip = 1;
  private readonly counts: BusyPollStats = { hits: 0, misses: 0, skipped: 0, slow: 0, crowded: 0 };
  /** Running average of the time from a send to the next bytes that arrive (at most the window), of answers that landed in a window, ms. */
  private averageWaitMs = 0;
  /** The time of the first send not yet answered, and whether its wait is being polled through (so timed). */
  private awaitingSince: number | undefined;
  private timing = false;
  /** Sends that opened no window since answers were found slow. */
  private sinceProbe = 0;
  private readonly tick = () => this.onTick();

  /** `windowUs`: the window (0: off); `cores`: whether this host has a core for every polling process (the host's roster unless a test gives one). */
  constructor(
    windowUs: number,
    private cores: CoresSpare = new HostPollers(),
  ) {
    this.windowMs = checkBusyPollUs(windowUs) / 1000;
  }

  /** The window, µs (0: off). */
  get windowUs(): number {
    return Math.round(this.windowMs * 1000);
  }

  /** Sets the window, µs (0 turns polling off; at most {@link MAX_BUSY_POLL_US}). */
  set windowUs(us: number) {
    this.windowMs = checkBusyPollUs(us) / 1000;
  }

  /** @internal Replaces the check of spare cores (tests whose processes must poll whatever else runs on the host). */
  set coresCheck(cores: CoresSpare) {
    this.cores = cores;
  }

  /** Enters this host's roster of polling processes, if polling is on (a transport's start; the first send would otherwise). */
  enterRoster(): void {
    if (this.windowMs > 0) this.cores.spare(performance.now());
  }

  /** True while the loop is kept polling. */
  get active(): boolean {
    return this.polling;
  }

  /** Counts so far. */
  stats(): BusyPollStats {
    return { ...this.counts };
  }

  /** Something was sent whose answer may come soon: poll until it does or the window ends. */
  sent(): void {
    if (this.windowMs === 0) return;
    const now = performance.now();
    const first = this.awaitingSince === undefined;
    if (first) this.awaitingSince = now;
    const slow = this.averageWaitMs > this.windowMs * LONG_WAIT_SHARE;
    if (this.polling) {
      if (first) this.timing = true;
      // An open window is not stretched over answers known to take long: it ends as it would have.
      if (!slow) this.deadline = now + this.windowMs;
      return;
    }
    if (!this.cores.spare(now)) {
      this.counts.crowded++;
      return;
    }
    if (slow && ++this.sinceProbe < PROBE_EVERY) {
      this.counts.slow++;
      return;
    }
    this.sinceProbe = 0;
    if (this.skipLeft > 0) {
      this.skipLeft--;
      this.counts.skipped++;
      return;
    }
    this.deadline = now + this.windowMs;
    this.polling = true;
    this.answered = false;
    this.timing = first;
    setImmediate(this.tick);
  }

  /** Bytes arrived on a direct route. */
  received(): void {
    if (this.awaitingSince !== undefined) {
      // One long wait (a collector's pause) counts as the window: it must not stop polling for many sends.
      if (this.timing) this.timed(Math.min(performance.now() - this.awaitingSince, this.windowMs));
      this.awaitingSince = undefined;
    }
    if (!this.polling || this.answered) return;
    this.answered = true;
    this.counts.hits++;
    this.missesInRow = 0;
    this.nextSkip = 1;
  }

  private onTick(): void {
    if (performance.now() < this.deadline) {
      setImmediate(this.tick);
      return;
    }
    this.polling = false;
    if (this.answered) return;
    // No answer in the window: a miss, which backs off below; the wait, not polled through to its end, is not timed.
    this.timing = false;
    this.counts.misses++;
    if (BACKOFF && ++this.missesInRow >= MISSES_BEFORE_BACKOFF) {
      this.skipLeft = this.nextSkip;
      this.nextSkip = Math.min(this.nextSkip * 2, MAX_SKIP);
    }
  }

  /** An answer landed in a window `ms` after the send it answers. */
  private timed(ms: number): void {
    this.averageWaitMs += WAIT_WEIGHT * (ms - this.averageWaitMs);
    this.timing = false;
  }
}

/** True for a window {@link BusyPoll} takes: 0..{@link MAX_BUSY_POLL_US} µs. */
function isWindow(us: unknown): us is number {
  return typeof us === 'number' && Number.isFinite(us) && us >= 0 && us <= MAX_BUSY_POLL_US;
}

/** `us` if it is a window {@link BusyPoll} takes; otherwise throws an InvalidArgumentError. */
export function checkBusyPollUs(us: number): number {
  if (!isWindow(us)) {
    throw new InvalidArgumentError(`direct.busyPollUs must be a number of microseconds from 0 to ${MAX_BUSY_POLL_US}, got ${String(us)}`);
  }
  return us;
}

function windowFromEnv(): number {
  const raw = process.env.TENSORBUS_BUSY_POLL_US;
  if (raw === undefined || raw === '') return DEFAULT_BUSY_POLL_US;
  const us = Number(raw);
  if (isWindow(us)) return us;
  process.stderr.write(`[tensorbus] TENSORBUS_BUSY_POLL_US=${raw} is not 0..${MAX_BUSY_POLL_US}: using ${DEFAULT_BUSY_POLL_US}\n`);
  return DEFAULT_BUSY_POLL_US;
}

/** The busy polling of this process, shared by its transports. */
export const busyPoll = new BusyPoll(windowFromEnv());
