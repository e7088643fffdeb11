/**
 * Runs the cases: each case on each Node system through its caller process
 * (blocks interleaved across systems), the peak-memory case with every
 * process's peak reset first, and the PyTorch anchor scripts. Prints which
 * case and system runs, and each figure as it comes.
 * @module
 */
import { casePlan, type BenchCase } from './cases.js';
import { resetPeak, statusBytes } from './process/memory.js';
import { formatDetail, formatRate, formatTime } from './report/format.js';
import type { CaseResult, PeakRecord } from './results.js';
import { median, summarize, type LatencySamples, type RateRounds } from './stats.js';
import { runsCase, type NodeSystem } from './systems/node-systems.js';
import { runAnchorScript, untimedCalls } from './systems/pytorch.js';
import { SYSTEM_LABELS, type SystemId } from './systems/system-ids.js';

/** Prints progress: which case, which block, which system, and each figure as it comes. */
export class Progress {
  private done = 0;
  private readonly started = Date.now();

  constructor(private readonly total: number) {}

  private stamp(): string {
    return `[${String(this.done + 1).padStart(2)}/${this.total} ${((Date.now() - this.started) / 1000).toFixed(0).padStart(4)}s]`;
  }

  /** A block of a case begins. */
  block(title: string, b: number, blocks: number): void {
    console.log(`${this.stamp()} ${title}${blocks > 1 ? `, block ${b + 1}/${blocks}` : ''}:`);
  }

  /** A system begins its block. */
  system(system: SystemId): void {
    process.stdout.write(`        ${SYSTEM_LABELS[system]} ... `);
  }

  /** The system's block ended with this figure (or error). */
  figure(text: string): void {
    process.stdout.write(`${text}\n`);
  }

  /** A case is done: its results. */
  finish(results: CaseResult[]): void {
    this.done++;
    for (const r of results) console.log(`     => ${SYSTEM_LABELS[r.system]}: ${formatDetail(r)}`);
  }
}

interface Collected {
  samplesMs: number[];
  rounds: number[];
  timeouts: number;
  skipped?: string;
}

function toResult(c: BenchCase, system: SystemId, got: Collected): CaseResult {
  if (got.skipped) return { caseId: c.id, system, skipped: got.skipped };
  if (c.kind === 'rate' || c.kind === 'rref') return { caseId: c.id, system, perSecond: median(got.rounds), rounds: got.rounds };
  // Lost calls count as infinitely slow: the median survives a few, not a majority.
  const s = summarize([...got.samplesMs, ...Array.from({ length: got.timeouts }, () => Number.POSITIVE_INFINITY)]);
  const timeouts = got.timeouts > 0 ? { timeouts: got.timeouts } : {};
  if (!Number.isFinite(s.medianMs)) return { caseId: c.id, system, skipped: `${got.timeouts} of ${s.n} calls lost`, ...timeouts };
  return { caseId: c.id, system, medianMs: s.medianMs, p10Ms: s.p10Ms, p90Ms: Number.isFinite(s.p90Ms) ? s.p90Ms : undefined, n: s.n, ...timeouts };
}

/**
 * Runs case `c` on every system that supports it, blocks interleaved across
 * the systems (see CasePlan). A failure leaves that system's figure out,
 * saying why.
 */
export async function runCase(c: BenchCase, systems: NodeSystem[], quick: boolean, progress: Progress): Promise<CaseResult[]> {
  const plan = casePlan(c, quick);
  const runners = systems.filter((s) => runsCase(s, c));
  const collected = new Map<SystemId, Collected>(runners.map((s) => [s.id, { samplesMs: [], rounds: [], timeouts: 0 }]));
  for (let b = 0; b < plan.blocks; b++) {
    progress.block(c.title, b, plan.blocks);
    for (const system of runners) {
      const got = collected.get(system.id)!;
      if (got.skipped) continue;
      progress.system(system.id);
      try {
        const answer = await system.caller.request<Partial<LatencySamples & RateRounds> & { skipped?: string }>(plan.op, plan.params(b));
        if (answer.skipped) got.skipped = answer.skipped;
        got.samplesMs.push(...(answer.samplesMs ?? []));
        got.rounds.push(...(answer.rounds ?? []));
        got.timeouts += answer.timeouts ?? 0;
        const figure = answer.skipped ?? (answer.rounds ? formatRate(median(answer.rounds)) : formatTime(median(answer.samplesMs ?? [])));
        progress.figure(figure);
      } catch (error) {
        got.skipped = `failed: ${(error as Error).message}`;
        progress.figure(got.skipped);
      }
    }
  }
  const results = runners.map((s) => toResult(c, s.id, collected.get(s.id)!));
  progress.finish(results);
  return results;
}

/** Runs case `c` on `system` alone and records the peak resident memory of each of its processes during it. */
export async function runPeakCase(system: NodeSystem, c: BenchCase, quick: boolean, progress: Progress): Promise<{ result: CaseResult; peaks: PeakRecord[] }> {
  const before = system.processes.map((p) => ({ ...p, startBytes: statusBytes(p.pid, 'VmRSS'), reset: resetPeak(p.pid) }));
  const [result] = await runCase(c, [system], quick, progress);
  const peaks = before.map((p) => ({
    system: system.id,
    role: p.role,
    pid: p.pid,
    peakBytes: statusBytes(p.pid, 'VmHWM') ?? Number.NaN,
    startBytes: p.startBytes,
    resetAtStart: p.reset,
  }));
  return { result: result!, peaks };
}

/**
 * Runs torch_rpc.py `runs` times for the round-trip `cases` (its own
 * repetitions: 2000 up to 64 KB, 30 up to 8 MB, 5 beyond; each case's
 * warm-up as tensorbus's, in every run): each case's figure is the median of
 * the runs' medians, each run's in `runMediansMs`. The first run also gives
 * the peak memory of its workers when `watchPeak`.
 */
export async function runPytorchLatency(cases: readonly BenchCase[], watchPeak: boolean, quick: boolean, runs = 1): Promise<{ results: CaseResult[]; peaks: PeakRecord[] }> {
  const noop = cases.find((c) => c.bytes === 0);
  const sizes = cases.filter((c) => (c.bytes ?? 0) > 0).map((c) => `${c.bytes}:${untimedCalls(c, quick)}`);
  const args = [...(noop ? ['--noop-warmup', String(untimedCalls(noop, quick))] : []), ...sizes];
  const medians = new Map<string, number[]>(cases.map((c) => [c.id, []]));
  let peaks: PeakRecord[] = [];
  for (let run = 0; run < runs; run++) {
    const got = await runAnchorScript('torch_rpc.py', args, watchPeak && run === 0);
    if (run === 0) peaks = got.peaks.map((p) => ({ system: 'pytorch', role: p.role, pid: p.pid, peakBytes: p.peakBytes, resetAtStart: false }));
    for (const c of cases) {
      const line = got.lines.find((l) => (c.bytes === 0 ? l.case === 'noop' : l.case === 'identity' && l.bytes === c.bytes));
      if (line?.median_us !== undefined) medians.get(c.id)!.push(line.median_us / 1000);
    }
  }
  const results: CaseResult[] = [];
  for (const c of cases) {
    const ms = medians.get(c.id)!;
    if (ms.length === runs) results.push({ caseId: c.id, system: 'pytorch', medianMs: median(ms), ...(runs > 1 ? { runMediansMs: ms } : {}) });
  }
  return { results, peaks };
}

/** Runs torch_rpc_throughput.py `runs` times (window 64, case `c`'s warm-up as tensorbus's) and keeps the median run. */
export async function runPytorchRate(c: BenchCase, runs: number, calls: number, quick: boolean): Promise<CaseResult> {
  const caseId = c.id;
  const rounds: number[] = [];
  for (let i = 0; i < runs; i++) {
    const { lines } = await runAnchorScript('torch_rpc_throughput.py', ['64', String(calls), String(untimedCalls(c, quick))]);
    const rate = lines.find((l) => l.calls_per_s !== undefined)?.calls_per_s;
    if (rate === undefined) throw new Error('torch_rpc_throughput.py printed no calls_per_s');
    rounds.push(rate);
  }
  return { caseId, system: 'pytorch', perSecond: median(rounds), rounds };
}

/**
 * Runs torch_rref_autograd.py once for the protocol `cases`: `rref` (remote +
 * to_here + release per second, the median of its five rounds) and
 * `autograd` (the median step of a RemoteModule forward, a local loss,
 * backward across both workers, get_gradients and context exit), each
 * warmed up as tensorbus is.
 */
export async function runPytorchProtocols(cases: readonly BenchCase[], quick: boolean): Promise<CaseResult[]> {
  const warmups = cases.flatMap((c) => [`--${c.kind}-warmup`, String(untimedCalls(c, quick))]);
  const { lines } = await runAnchorScript('torch_rref_autograd.py', warmups);
  const out: CaseResult[] = [];
  for (const c of cases) {
    const line = lines.find((l) => l.case === c.kind);
    if (c.kind === 'rref' && line?.calls_per_s !== undefined) out.push({ caseId: c.id, system: 'pytorch', perSecond: line.calls_per_s });
    if (c.kind === 'autograd' && line?.median_us !== undefined) out.push({ caseId: c.id, system: 'pytorch', medianMs: line.median_us / 1000 });
  }
  if (out.length < cases.length) throw new Error(`torch_rref_autograd.py printed ${out.length} of the ${cases.length} figures asked for`);
  return out;
}
