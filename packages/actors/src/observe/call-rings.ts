/**
 * Calls per function over the last minutes, in per-second buckets: a ring of
 * {@link RING_SECONDS} slots per function, written by the call path (only
 * while {@link observing} is on) and read by the stats query. A slot is reused
 * once its second is past the ring's span; nothing is allocated per call.
 * @module
 */

/** Seconds of history kept per function. */
export const RING_SECONDS = 300;
/** Functions tracked per worker; calls of any further function are counted under {@link OTHER_FUNCTIONS}. */
export const MAX_FUNCTIONS = 256;
/** The name calls beyond {@link MAX_FUNCTIONS} are counted under. */
export const OTHER_FUNCTIONS = '(other)';

/** One function's calls in one second. */
export interface SecondBucket {
  /** Unix second. */
  second: number;
  calls: number;
  errors: number;
  /** Summed latency, ms. */
  totalMs: number;
  /** Longest call, ms. */
  maxMs: number;
}

/** The per-second history of one function. */
class FunctionRing {
  readonly seconds = new Int32Array(RING_SECONDS).fill(-1);
  readonly calls = new Uint32Array(RING_SECONDS);
  readonly errors = new Uint32Array(RING_SECONDS);
  readonly totalMs = new Float64Array(RING_SECONDS);
  readonly maxMs = new Float64Array(RING_SECONDS);
  total = 0;

  add(second: number, ms: number, failed: boolean): void {
    const slot = second % RING_SECONDS;
    if (this.seconds[slot] !== second) {
      this.seconds[slot] = second;
      this.calls[slot] = 0;
      this.errors[slot] = 0;
      this.totalMs[slot] = 0;
      this.maxMs[slot] = 0;
    }
    this.calls[slot]!++;
    if (failed) this.errors[slot]!++;
    this.totalMs[slot]! += ms;
    if (ms > this.maxMs[slot]!) this.maxMs[slot] = ms;
    this.total++;
  }

  /** The buckets of the last `seconds` seconds up to `now`, oldest first, empty ones left out. */
  recent(now: number, seconds: number): SecondBucket[] {
    const out: SecondBucket[] = [];
    for (let s = now - seconds + 1; s <= now; s++) {
      const slot = s % RING_SECONDS;
      if (this.seconds[slot] !== s) continue;
      out.push({ second: s, calls: this.calls[slot]!, errors: this.errors[slot]!, totalMs: this.totalMs[slot]!, maxMs: this.maxMs[slot]! });
    }
    return out;
  }
}

/** The call history of one worker, per function (served or made: one ring set per side). */
export class CallRings {
  private readonly rings = new Map<string, FunctionRing>();

  /** Records one call of `fn` that ended now after `ms`, failed or not. */
  record(fn: string, ms: number, failed: boolean): void {
    let ring = this.rings.get(fn);
    if (ring === undefined) {
      const name = this.rings.size < MAX_FUNCTIONS ? fn : OTHER_FUNCTIONS;
      ring = this.rings.get(name);
      if (ring === undefined) this.rings.set(name, (ring = new FunctionRing()));
    }
    ring.add(Math.floor(Date.now() / 1000), ms, failed);
  }

  /** Per function: calls since the start, and the buckets of the last `seconds` seconds (at most {@link RING_SECONDS}). */
  recent(seconds: number, limit: number): Array<{ fn: string; total: number; buckets: SecondBucket[] }> {
    const now = Math.floor(Date.now() / 1000);
    const span = Math.max(1, Math.min(RING_SECONDS, Math.floor(seconds)));
    return [...this.rings]
      .map(([fn, ring]) => ({ fn, total: ring.total, buckets: ring.recent(now, span) }))
      .sort((a, b) => b.total - a.total)
      .slice(0, limit);
  }
}
