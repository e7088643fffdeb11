/**
 * Runs the cases: each case on each Node system through its caller process
 * (blocks interleaved across systems, PyTorch's anchor script run once in
 * each block, each block starting one system later than the one before),
 * and the peak-memory case with every process's peak reset first. Prints
 * which case and system runs, and each figure as it comes.
 * @module
 */
import { casePlan, type BenchCase } from './cases.js';
import { resetPeak, statusBytes } from './process/memory.js';
import { formatDetail, formatRate, formatTime } from './report/format.js';
import type { CaseResult, PeakRecord } from './results.js';
import { median, rotation, summarize, type LatencySamples, type RateRounds } from './stats.js';
import { runsCase, type NodeSystem } from './systems/node-systems.js';
import { runAnchorScript, untimedCalls, type AnchorLine } from './systems/pytorch.js';
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

/** What one run of a peer's script gives for a case: a round trip's median, or a rate. */
export interface PeerFigure {
  medianMs?: number;
  perSecond?: number;
}

/** A peer measured inside a case's blocks: its script is run once in each block, in turn with the Node systems. */
export interface BlockPeer {
  system: SystemId;
  run(): Promise<PeerFigure>;
}

/** The peer's figure of case `c` from its runs: the median of the runs' medians (round trips) or of their rates. */
function peerResult(c: BenchCase, peer: BlockPeer, runs: PeerFigure[], skipped: string | undefined): CaseResult {
  if (skipped) return { caseId: c.id, system: peer.system, skipped };
  if (c.kind === 'latency' || c.kind === 'autograd') {
    const medians = runs.map((r) => r.medianMs!);
    return { caseId: c.id, system: peer.system, medianMs: median(medians), runMediansMs: medians };
  }
  const rates = runs.map((r) => r.perSecond!);
  return { caseId: c.id, system: peer.system, perSecond: median(rates), rounds: rates };
}

/**
 * Runs case `c` on every system that supports it, blocks interleaved across
 * the systems (see CasePlan), and `peer`'s script once in each block beside
 * them, so that a slow stretch of this shared machine lands on the peer as
 * on the Node systems. Each block starts one system later than the block
 * before (the peer counting as one), so none always runs first or right
 * after a given other. A failure leaves that system's figure out, saying why.
 */
export async function runCase(c: BenchCase, systems: NodeSystem[], quick: boolean, progress: Progress, peer?: BlockPeer): Promise<CaseResult[]> {
  const plan = casePlan(c, quick);
  const runners = systems.filter((s) => runsCase(s, c));
  const collected = new Map<SystemId, Collected>(runners.map((s) => [s.id, { samplesMs: [], rounds: [], timeouts: 0 }]));
  const peerRuns: PeerFigure[] = [];
  let peerSkipped: string | undefined;
  const runSystem = async (system: NodeSystem, b: number): Promise<void> => {
    const got = collected.get(system.id)!;
    if (got.skipped) return;
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
  };
  const runPeer = async (anchor: BlockPeer): Promise<void> => {
    if (peerSkipped) return;
    progress.system(anchor.system);
    try {
      const figure = await anchor.run();
      peerRuns.push(figure);
      progress.figure(figure.medianMs !== undefined ? formatTime(figure.medianMs) : formatRate(figure.perSecond!));
    } catch (error) {
      peerSkipped = `failed: ${(error as Error).message}`;
      progress.figure(peerSkipped);
    }
  };
  for (let b = 0; b < plan.blocks; b++) {
    progress.block(c.title, b, plan.blocks);
    const turns: Array<() => Promise<void>> = [...runners.map((system) => () => runSystem(system, b)), ...(peer ? [() => runPeer(peer)] : [])];
    for (const turn of rotation(turns, b)) await turn();
  }
  const results = runners.map((s) => toResult(c, s.id, collected.get(s.id)!));
  if (peer) results.push(peerResult(c, peer, peerRuns, peerSkipped));
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

/** The JSON line of `lines` that `wanted` picks, else an error naming the script and `what` it lacks. */
function lineOf(lines: AnchorLine[], script: string, wanted: (line: AnchorLine) => boolean, what: string): AnchorLine {
  const line = lines.find(wanted);
  if (!line) throw new Error(`${script} printed no ${what}`);
  return line;
}

/**
 * One run of torch_rpc.py for the round-trip case `c` alone (its own
 * repetitions: 2000 up to 64 KB, 30 up to 8 MB, 5 beyond), given the
 * untimed calls tensorbus gets in the whole case: its median, and with
 * `watchPeak` the peak memory of its workers (the 400 MB case).
 */
export async function runPytorchRoundTrip(c: BenchCase, quick: boolean, watchPeak = false): Promise<{ medianMs: number; peaks: PeakRecord[] }> {
  const warmup = String(untimedCalls(c, quick));
  const { lines, peaks } = await runAnchorScript('torch_rpc.py', c.bytes === 0 ? ['--noop-warmup', warmup] : [`${c.bytes}:${warmup}`], watchPeak);
  const wanted = (l: AnchorLine) => (c.bytes === 0 ? l.case === 'noop' : l.case === 'identity' && l.bytes === c.bytes) && l.median_us !== undefined;
  return {
    medianMs: lineOf(lines, 'torch_rpc.py', wanted, `median for ${c.id}`).median_us! / 1000,
    peaks: peaks.map((p) => ({ system: 'pytorch', role: p.role, pid: p.pid, peakBytes: p.peakBytes, resetAtStart: false })),
  };
}

/**
 * One run of PyTorch's anchor script for case `c` alone, given the untimed
 * calls tensorbus gets in the whole case ({@link untimedCalls}): each run is
 * a fresh pair of processes, so each is warmed up at least as tensorbus is.
 * Round trips: {@link runPytorchRoundTrip}; calls/s: torch_rpc_throughput.py
 * (64 in flight); rref: torch_rref_autograd.py's cycles/s (the median of its
 * five rounds); autograd: its median step (a RemoteModule forward, a local
 * loss, backward across both workers, get_gradients, context exit).
 */
export async function runPytorchCase(c: BenchCase, quick: boolean): Promise<PeerFigure> {
  const warmup = String(untimedCalls(c, quick));
  switch (c.kind) {
    case 'latency':
      return { medianMs: (await runPytorchRoundTrip(c, quick)).medianMs };
    case 'rate': {
      const calls = quick ? 5_000 : 20_000;
      const { lines } = await runAnchorScript('torch_rpc_throughput.py', ['64', String(calls), warmup]);
      return { perSecond: lineOf(lines, 'torch_rpc_throughput.py', (l) => l.calls_per_s !== undefined, 'calls_per_s').calls_per_s! };
    }
    case 'rref':
    case 'autograd': {
      const { lines } = await runAnchorScript('torch_rref_autograd.py', [`--${c.kind}-warmup`, warmup]);
      const figure = (l: AnchorLine) => (c.kind === 'rref' ? l.calls_per_s : l.median_us);
      const line = lineOf(lines, 'torch_rref_autograd.py', (l) => l.case === c.kind && figure(l) !== undefined, `${c.kind} figure`);
      return c.kind === 'rref' ? { perSecond: line.calls_per_s! } : { medianMs: line.median_us! / 1000 };
    }
  }
}
