/**
 * Keeps this process's event loop polling for a short window after it sent
 * something on a direct route that is answered soon (a request, or a reply
 * to a peer that calls again at once), so the answer is read as it lands
 * instead of after the CPU has gone idle and been woken again.
 *
 * On the virtual machines this was measured on, a vCPU that halts takes tens
 * of microseconds to wake: more than a small call's whole work. While a
 * `setImmediate` is queued, libuv polls its sockets without blocking, so the
 * process never halts in the window. The window costs CPU only when the
 * answer comes later than it: such windows are misses, and after
 * {@link MISSES_BEFORE_BACKOFF} misses in a row polling stops for a growing
 * number of sends (up to {@link MAX_SKIP}), and starts again after an answer
 * that lands inside a window. A process whose peers answer slowly (they
 * compute) so spends almost nothing on it. On a machine with more busy
 * processes than cores, polling would take the CPU the answer needs: every
 * {@link CHECK_MS} of a window the process compares the CPU it got with the
 * time that passed, and a share below {@link MIN_CPU_SHARE} (it was made to
 * wait for a core) ends the window and backs off the same way. See
 * docs/data-plane.md, "Busy polling".
 * @module
 */
import { performance } from 'node:perf_hooks';
import { InvalidArgumentError } from '@tensorbus/core';

/** Default window, µs (`TENSORBUS_BUSY_POLL_US` overrides it; 0 turns polling off). */
export const DEFAULT_BUSY_POLL_US = 200;
/** Longest window accepted, µs. */
export const MAX_BUSY_POLL_US = 10_000;
/** Windows in a row without an answer before polling backs off. */
export const MISSES_BEFORE_BACKOFF = 3;
/** Most sends skipped between two tries while backed off. */
export const MAX_SKIP = 1024;
/** How often a window checks that it had a core to itself, ms. */
export const CHECK_MS = 1;
/** A window that got less CPU than this share of the time that passed was waiting for a core: it ends. */
export const MIN_CPU_SHARE = 0.75;

/** What polling has done so far in this process (for tests and the benchmark). */
export interface BusyPollStats {
  /** Windows in which an answer landed (counted as it lands). */
  hits: number;
  /** Windows that ended without one. */
  misses: number;
  /** Sends that opened no window because polling was backed off. */
  skipped: number;
  /** Windows ended because the process was waiting for a core. */
  contended: number;
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
  private nextSkip = 1;
  private readonly counts: BusyPollStats = { hits: 0, misses: 0, skipped: 0, contended: 0 };
  /** When the window last checked its CPU share, and the process's CPU time then, ms. */
  private checkedAt = 0;
  private cpuAt = 0;
  private readonly tick = () => this.onTick();

  constructor(windowUs: number) {
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
    if (this.skipLeft > 0 && !this.polling) {
      this.skipLeft--;
      this.counts.skipped++;
      return;
    }
    const now = performance.now();
    this.deadline = now + this.windowMs;
    if (this.polling) return;
    this.polling = true;
    this.answered = false;
    this.checkedAt = now;
    this.cpuAt = cpuMs();
    setImmediate(this.tick);
  }

  /** Bytes arrived on a direct route. */
  received(): void {
    if (!this.polling || this.answered) return;
    this.answered = true;
    this.counts.hits++;
    this.missesInRow = 0;
    this.nextSkip = 1;
  }

  private onTick(): void {
    const now = performance.now();
    if (now - this.checkedAt >= CHECK_MS && this.waitedForCore(now)) {
      this.polling = false;
      this.counts.contended++;
      this.backOff();
      return;
    }
    if (now < this.deadline) {
      setImmediate(this.tick);
      return;
    }
    this.polling = false;
    if (this.answered) return;
    this.counts.misses++;
    if (++this.missesInRow >= MISSES_BEFORE_BACKOFF) this.backOff();
  }

  /** True when, since the last check, the process got less than {@link MIN_CPU_SHARE} of the time as CPU. */
  private waitedForCore(now: number): boolean {
    const cpu = cpuMs();
    const share = (cpu - this.cpuAt) / (now - this.checkedAt);
    this.checkedAt = now;
    this.cpuAt = cpu;
    return share < MIN_CPU_SHARE;
  }

  private backOff(): void {
    this.skipLeft = this.nextSkip;
    this.nextSkip = Math.min(this.nextSkip * 2, MAX_SKIP);
  }
}

/** CPU time of this process so far (every thread), ms. */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** `us` if it is a window {@link BusyPoll} takes (0..{@link MAX_BUSY_POLL_US} µs); otherwise throws an InvalidArgumentError. */
export function checkBusyPollUs(us: number): number {
  if (typeof us !== 'number' || !Number.isFinite(us) || us < 0 || us > MAX_BUSY_POLL_US) {
    throw new InvalidArgumentError(`direct.busyPollUs must be a number of microseconds from 0 to ${MAX_BUSY_POLL_US}, got ${String(us)}`);
  }
  return us;
}

function windowFromEnv(): number {
  const raw = process.env.TENSORBUS_BUSY_POLL_US;
  if (raw === undefined || raw === '') return DEFAULT_BUSY_POLL_US;
  const us = Number(raw);
  if (!Number.isFinite(us) || us < 0 || us > MAX_BUSY_POLL_US) {
    process.stderr.write(`[tensorbus] TENSORBUS_BUSY_POLL_US=${raw} is not 0..${MAX_BUSY_POLL_US}: using ${DEFAULT_BUSY_POLL_US}\n`);
    return DEFAULT_BUSY_POLL_US;
  }
  return us;
}

/** The busy polling of this process, shared by its transports. */
export const busyPoll = new BusyPoll(windowFromEnv());
