/**
 * The benchmark's cases (no-op, identity of five sizes, async calls per
 * second, RRef round trips, distributed autograd) and how many repetitions
 * each gets in a full and in a quick run.
 * @module
 */
import type { LatencyPlan, RatePlan } from './stats.js';

/** What a case measures. */
export type CaseKind = 'latency' | 'rate' | 'rref' | 'autograd';

/** One case of the benchmark. */
export interface BenchCase {
  /** Short name, as `--only` takes it. */
  id: string;
  /** As the tables print it. */
  title: string;
  kind: CaseKind;
  /** Payload of a latency case, bytes (0: no-op). */
  bytes?: number;
  /** Repetitions of a latency case where they differ from its size's usual ones. */
  repetitions?: Repetitions;
}

/** How often a latency case runs: warm-up calls (before the first block), measured calls, and blocks they are split into. */
export interface Repetitions {
  warmup: number;
  reps: number;
  blocks: number;
}

const MB = 1 << 20;

/** Payload sizes of the identity cases: float32 tensors of 4 KB to 400 MB. */
export const SIZES = [4096, MB, 4 * MB, 40 * MB, 400 * MB] as const;

/** The size whose round trip also measures peak memory. */
export const PEAK_MEMORY_BYTES = 400 * MB;

/** Human size: 4 KB, 1 MB, 400 MB. */
export function sizeLabel(bytes: number): string {
  return bytes >= MB ? `${bytes / MB} MB` : `${bytes / 1024} KB`;
}

/** Every case, in the order the tables print them. */
export const CASES: readonly BenchCase[] = [
  { id: 'noop', title: 'no-op round trip', kind: 'latency', bytes: 0 },
  ...SIZES.map((bytes): BenchCase => ({ id: sizeLabel(bytes).replace(' ', ''), title: `identity ${sizeLabel(bytes)}`, kind: 'latency', bytes })),
  { id: 'async', title: 'small async calls/s, 64 in flight', kind: 'rate' },
  { id: 'rref', title: 'remote + toHere + release /s', kind: 'rref' },
  { id: 'autograd', title: 'dist autograd fwd+bwd, remote linear', kind: 'autograd' },
];

/** The cases measured between two hosts (tensorbus-2hosts, pytorch-2hosts). */
export const TWO_HOST_CASE_IDS: readonly string[] = ['4MB', '400MB'];

/** The id of the growth study, for `--only`. */
export const GROWTH_ID = 'growth';
/** The id of the application cases (apps/app-cases.ts), for `--only`. */
export const APPS_ID = 'apps';

/**
 * How a case runs: its repetitions are split into blocks, and the blocks of
 * all systems are interleaved (block 1 of every system, then block 2, ...),
 * so a burst of load from elsewhere on this shared machine falls on every
 * system alike instead of on whichever ran at the time. The first block of
 * each system has a warm-up; the later blocks of the 1–8 MB round trips
 * start with {@link REWARM_CALLS} untimed calls of their own.
 */
export interface CasePlan {
  blocks: number;
  /** The caller command of the case. */
  op: CaseKind;
  /** Parameters of block `b` (0-based). */
  params(b: number): Record<string, unknown>;
}

function split(total: number, blocks: number, b: number): number {
  return Math.floor(total / blocks) + (b < total % blocks ? 1 : 0);
}

/** The first block's warm-up: a count, or for the megabyte round trips a count with a time limit (see {@link MEGABYTE_WARMUP}). */
type Warmup = number | Omit<LatencyPlan, 'reps'>;

function latencyPlan(reps: number, warmup: Warmup, blocks: number, rewarm = 0): (b: number) => LatencyPlan {
  return (b) => ({ ...(b > 0 ? { warmup: rewarm } : typeof warmup === 'number' ? { warmup } : warmup), reps: split(reps, blocks, b) });
}

/**
 * Warm-up of the small cases in a full run. A Node process's call path
 * settles only after some thousands of calls (V8 compiles it in tiers, on the
 * same 2 cores as everything else): from a fresh pair of processes the no-op's
 * median per 1,000 calls goes 416, 255, 154, 129, 87, 71, 70 µs, and an RRef
 * cycle's rate doubles over its first 2,000. A training loop runs far longer
 * than that, so the figures are taken once it has settled, for every Node
 * system alike (PyTorch's scripts warm up as they do).
 */
const JIT_WARMUP_CALLS = 6000;
/**
 * The same for RRef cycles: from a fresh pair of processes the rate per 500
 * cycles goes 1.5, 1.7, 2.6, 3.0, 3.8, 5.9, 8.1 k/s and settles at 11-14 k/s
 * from about the 4,000th cycle.
 */
const JIT_WARMUP_CYCLES = 6000;
/**
 * An autograd step settles later than a call: from a fresh pair of processes
 * its median per 250 steps goes 1.9, 1.5, 1.1, 0.83, 1.05, 0.86, 0.77, 0.47
 * ms and stays near 0.35 ms from the 2,000th step on.
 */
const JIT_WARMUP_STEPS = 3000;
/**
 * Untimed steps at the start of each later block of the autograd case, for
 * the reason `REWARM_CALLS` gives for the megabyte round trips: between two
 * blocks the other systems and PyTorch's script run for seconds, and a step
 * that follows such a spell is slow for a while. After 4 s of idle, the
 * median per 25 steps of a settled pair of processes went 1.02, 0.88, 0.95,
 * 0.65, 0.65, 0.63, 0.74 and 0.47 ms, then stayed at 0.4–0.6 ms. PyTorch's
 * script times its 200 steps right after its warm-up; with these steps
 * none of tensorbus's timed steps follows an idle spell either.
 */
const REWARM_STEPS = 200;

/**
 * Warm-up of the 1–8 MB round trips in a full run: 2,000 calls, as a
 * training loop that moves megabytes runs far longer than that. tensorbus's
 * large-frame path (the shared-memory filling, the codec's sinks, the
 * segment pool) keeps getting faster for longer than the 300 calls this
 * case had: in 8 pairs of fresh processes, the median of 90 calls of 4 MB
 * after 2,000 calls of warm-up was below the one after 300 in 7 pairs
 * (medians 1.75 against 2.7 ms; per-pair ratios 0.43–1.07, median 0.65).
 * PyTorch's is native code: its script given 2,000 against 300 went either
 * way (5 pairs, ratios 0.56–1.56), and it is given the same count. The
 * warm-up stops after 10 s once 300 calls are done, so that the systems that
 * take tens or hundreds of milliseconds a call (the bus, the browser tab)
 * are not kept warming up for minutes; each system gets the same rule.
 */
const MEGABYTE_WARMUP: Omit<LatencyPlan, 'reps'> = { warmup: 2000, warmupFloor: 300, warmupMaxMs: 10_000 };
/**
 * Untimed calls at the start of each later block of the 1–8 MB round trips.
 * Between two blocks of a system the other systems run for seconds, and
 * this machine's kernel packs runnable tasks onto as few vCPUs as it can
 * (`sched_vcpu_pack` on its command line): after an idle spell the woken
 * callee runs on its caller's vCPU, and the two take turns on it until the
 * scheduler parts them. After 900 ms of idle, the median over 12 blocks of
 * a call of 4 MB went 7.6 and 4.6 ms for the first call, 2.5–3.5 ms up to
 * the 14th, and 1.6–1.9 ms from about the 20th. PyTorch's anchor script
 * times its 30 calls one after another, after 3 of warm-up, so none of them
 * follows an idle spell; with these calls none of tensorbus's does either.
 * What idle spells cost a caller is said in docs/performance.md.
 */
const REWARM_CALLS = 25;
/**
 * Untimed calls at the start of each later block of the round trips up to
 * 64 KB and of the call rates. A Node process left idle while the other
 * systems run cools down: a settled in-process no-op loop (21-26k calls/s)
 * ran at 6-9k calls/s in the first 0.1 s after 15-30 s of idle, and took
 * about a second to settle again; a no-op block of 1,000 calls lies wholly
 * in that spell. PyTorch's script is a fresh pair of processes in every
 * block, given every block's untimed calls, so it never times a cold call;
 * with these, no Node system does either.
 */
const SMALL_REWARM_CALLS = 3000;

/** Repetitions of a round-trip case of `bytes`, in blocks. */
function roundTripPlan(bytes: number, quick: boolean): { blocks: number; plan: (b: number) => LatencyPlan } {
  // [warm-up, timed calls, blocks, untimed calls before each later block]
  const [warmup, reps, blocks, rewarm] =
    bytes <= 65_536 ? (quick ? [50, 300, 3, 0] : [JIT_WARMUP_CALLS, 5000, 5, SMALL_REWARM_CALLS])
    : bytes <= 8 * MB ? (quick ? [2, 8, 2, 0] : [MEGABYTE_WARMUP, 30, 3, REWARM_CALLS])
    : bytes <= 64 * MB ? (quick ? [1, 3, 1, 0] : [2, 10, 2, 0]) : [1, 5, 1, 0];
  return { blocks, plan: latencyPlan(reps, warmup, blocks, rewarm) };
}

/** Rounds of a rate case, one round per block. */
function ratePlan(window: number, calls: number, rounds: number, warmupCalls: number): (b: number) => RatePlan {
  return (b) => ({ window, calls, rounds: 1, warmupCalls: b === 0 ? warmupCalls : Math.min(warmupCalls, SMALL_REWARM_CALLS) });
}

/** The plan of case `c`. */
export function casePlan(c: BenchCase, quick: boolean): CasePlan {
  switch (c.kind) {
    case 'latency': {
      const { blocks, plan } = c.repetitions ? { blocks: c.repetitions.blocks, plan: latencyPlan(c.repetitions.reps, c.repetitions.warmup, c.repetitions.blocks) } : roundTripPlan(c.bytes!, quick);
      return { blocks, op: c.kind, params: (b) => ({ bytes: c.bytes, plan: plan(b) }) };
    }
    case 'rate': {
      // 64 calls in flight, as the PyTorch anchor.
      const [calls, rounds, warmup] = quick ? [1000, 3, 200] : [10_000, 5, 2000];
      const plan = ratePlan(64, calls, rounds, warmup);
      return { blocks: rounds, op: c.kind, params: (b) => ({ plan: plan(b) }) };
    }
    case 'rref': {
      // One operation after another.
      const [calls, rounds, warmup] = quick ? [100, 3, 20] : [500, 5, JIT_WARMUP_CYCLES];
      const plan = ratePlan(1, calls, rounds, warmup);
      return { blocks: rounds, op: c.kind, params: (b) => ({ plan: plan(b) }) };
    }
    case 'autograd': {
      const [warmup, reps, blocks, rewarm] = quick ? [5, 30, 3, 0] : [JIT_WARMUP_STEPS, 200, 5, REWARM_STEPS];
      const plan = latencyPlan(reps, warmup, blocks, rewarm);
      // One model for every block, as the PyTorch script: made by the first, freed by the last.
      return { blocks, op: c.kind, params: (b) => ({ plan: plan(b), last: b === blocks - 1 }) };
    }
  }
}

/** Callers of the growth study. */
export const GROWTH_WORKERS = [2, 4, 8, 16] as const;

/** How long each growth level runs, ms. */
export function growthPlan(quick: boolean): { warmupMs: number; durationMs: number } {
  return quick ? { warmupMs: 200, durationMs: 800 } : { warmupMs: 500, durationMs: 3000 };
}
