/**
 * Timing loops and summaries of the benchmark, shared by every system's
 * caller process: sequential round trips (median of many, after a warm-up),
 * calls per second with a window in flight, and sequential operations per
 * second (median of several rounds).
 * @module
 */

/** How many times to run a call. */
export interface LatencyPlan {
  /** Untimed calls before the timed ones (at most this many when `warmupMaxMs` is set). */
  warmup: number;
  reps: number;
  /**
   * The warm-up stops early once it has run this long, ms, after at least
   * `warmupFloor` calls: a system many times slower than the others is not
   * kept warming up for minutes.
   */
  warmupMaxMs?: number;
  warmupFloor?: number;
}

/** Round-trip times of a case, ms. */
export interface LatencySummary {
  medianMs: number;
  p10Ms: number;
  p90Ms: number;
  minMs: number;
  n: number;
}

/** Rounds of a throughput case. */
export interface RatePlan {
  /** Calls (or operations) per round. */
  calls: number;
  rounds: number;
  /** Calls of a first, unmeasured round. */
  warmupCalls: number;
  /** Calls in flight at once (1 = sequential). */
  window: number;
}

/** Calls per second of each round of a throughput case. */
export interface RateRounds {
  rounds: number[];
}

/** The `q` quantile (0..1) of `values` (nearest rank on a sorted copy). */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(q * (sorted.length - 1))))]!;
}

/** The median of `values` (the mean of the two middle ones when their count is even). */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * `items` starting at index `round` (modulo their number) and wrapping
 * around: round 0 in order, round 1 from the second, ... The order in which
 * the bench runs its systems in each block of a case, so that none always
 * runs first. (Within a block each still follows the same other: see
 * {@link balancedOrder} where that matters.)
 */
export function rotation<T>(items: readonly T[], round: number): T[] {
  const start = items.length === 0 ? 0 : round % items.length;
  return [...items.slice(start), ...items.slice(0, start)];
}

/** Summarises round-trip samples (ms). */
export function summarize(samplesMs: readonly number[]): LatencySummary {
  return {
    medianMs: median(samplesMs),
    p10Ms: quantile(samplesMs, 0.1),
    p90Ms: quantile(samplesMs, 0.9),
    minMs: Math.min(...samplesMs),
    n: samplesMs.length,
  };
}

/** Round-trip times of one block of a case, ms. */
export interface LatencySamples {
  samplesMs: number[];
  /** Measured calls that were lost: no answer in time, or a failed transfer (they count as infinitely slow in the median). */
  timeouts?: number;
}

/** What a timed call resolves to when it was lost (it is counted, not timed). */
export const TIMED_OUT = Symbol('timed out');

/** Runs `call` `warmup` times unmeasured (fewer past `warmupMaxMs`), then `reps` times one after another, timing each. */
export async function timeCalls(call: () => Promise<unknown>, plan: LatencyPlan): Promise<LatencySamples> {
  const warmupEnd = plan.warmupMaxMs === undefined ? undefined : performance.now() + plan.warmupMaxMs;
  for (let i = 0; i < plan.warmup; i++) {
    if (warmupEnd !== undefined && i >= (plan.warmupFloor ?? 0) && performance.now() > warmupEnd) break;
    await call();
  }
  const samplesMs: number[] = [];
  let timeouts = 0;
  for (let i = 0; i < plan.reps; i++) {
    const started = performance.now();
    if ((await call()) === TIMED_OUT) timeouts++;
    else samplesMs.push(performance.now() - started);
  }
  return timeouts > 0 ? { samplesMs, timeouts } : { samplesMs };
}

/**
 * Calls per second with `window` calls in flight: calls are issued in batches
 * of `window` and each batch is awaited whole (what the PyTorch and NATS
 * anchors do), over `rounds` rounds of `calls` calls, each timed.
 */
export async function windowRate(call: (i: number) => Promise<unknown>, plan: RatePlan): Promise<RateRounds> {
  const round = async (calls: number) => {
    const started = performance.now();
    let inflight: Array<Promise<unknown>> = [];
    for (let i = 0; i < calls; i++) {
      inflight.push(call(i));
      if (inflight.length >= plan.window) {
        await Promise.all(inflight);
        inflight = [];
      }
    }
    await Promise.all(inflight);
    return calls / ((performance.now() - started) / 1000);
  };
  if (plan.warmupCalls > 0) await round(plan.warmupCalls);
  const rounds: number[] = [];
  for (let r = 0; r < plan.rounds; r++) rounds.push(await round(plan.calls));
  return { rounds };
}

/** What one caller measured in a fixed time window. */
export interface WindowSample {
  /** Calls completed in the window. */
  calls: number;
  /** Length of the window, ms. */
  elapsedMs: number;
  /** Round-trip time of each call of the window, ms. */
  samplesMs: number[];
}

/**
 * Calls `call` one after another: for `warmupMs` unmeasured, then for
 * `durationMs`, timing each call (what each caller does in the growth study).
 */
export async function callForDuration(call: () => Promise<unknown>, warmupMs: number, durationMs: number): Promise<WindowSample> {
  const warmupEnd = performance.now() + warmupMs;
  while (performance.now() < warmupEnd) await call();
  const samplesMs: number[] = [];
  const started = performance.now();
  const end = started + durationMs;
  let now = started;
  while (now < end) {
    const t = performance.now();
    await call();
    now = performance.now();
    samplesMs.push(now - t);
  }
  return { calls: samplesMs.length, elapsedMs: now - started, samplesMs };
}

/** Several callers' windows as one: every sample, and the sum of their rates (calls/s). */
export function combineWindows(windows: readonly WindowSample[]): { medianMs: number; p90Ms: number; perSecond: number; calls: number } {
  const all = windows.flatMap((w) => w.samplesMs);
  return {
    medianMs: median(all),
    p90Ms: quantile(all, 0.9),
    perSecond: windows.reduce((sum, w) => sum + w.calls / (w.elapsedMs / 1000), 0),
    calls: all.length,
  };
}

/**
 * The order of `items` in round `round` of a Williams design: over `n` rounds
 * (`2n` when their number `n` is odd) each item runs in each place equally
 * often and right after each other item equally often, so neither what ran
 * just before a contender nor its place in the round favours it. Round 0 is
 * 0, 1, n-1, 2, n-2, ...; round `2k` (or `k` for an even `n`) adds `k` to each
 * index; for an odd `n`, round `2k+1` is round `2k` reversed.
 */
export function balancedOrder<T>(items: readonly T[], round: number): T[] {
  const n = items.length;
  if (n === 0) return [];
  const odd = n % 2 === 1;
  const shift = (odd ? Math.floor(round / 2) : round) % n;
  const first = Array.from({ length: n }, (_, j) => (j === 0 ? 0 : j % 2 === 1 ? (j + 1) / 2 : n - j / 2));
  const order = first.map((index) => items[(index + shift) % n]!);
  return odd && round % 2 === 1 ? order.reverse() : order;
}
