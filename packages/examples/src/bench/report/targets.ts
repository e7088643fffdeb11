/**
 * The performance targets of tensorbus, as ratios to its peers measured in
 * the same run, and whether each run met them. Nothing is adjusted: a
 * missing figure leaves the target unevaluated ('n/a').
 * @module
 */
import type { CaseResult, PeakRecord } from '../results.js';
import { SYSTEM_SHORT, TENSORBUS_SYSTEMS, type SystemId } from '../systems/system-ids.js';

/** A target comparing a tensorbus figure with a peer's. */
interface RatioTarget {
  caseId: string;
  peer: SystemId;
  /** How the ratio is taken: `latency` = tensorbus time ÷ peer time; `throughput` = peer time ÷ tensorbus time; `rate` = tensorbus rate ÷ peer rate. */
  measure: 'latency' | 'throughput' | 'rate';
  /** `max`: ratio ≤ limit passes; `min`: ratio ≥ limit passes. */
  bound: 'max' | 'min';
  limit: number;
}

/** The targets of tensorbus on one host (over NATS and in-process), against the peers on that host. */
const SAME_HOST_TARGETS: RatioTarget[] = [
  { caseId: 'noop', peer: 'pytorch', measure: 'latency', bound: 'max', limit: 0.5 },
  { caseId: 'noop', peer: 'tcp', measure: 'latency', bound: 'max', limit: 2 },
  { caseId: 'noop', peer: 'nats', measure: 'latency', bound: 'max', limit: 1.2 },
  { caseId: 'async', peer: 'pytorch', measure: 'rate', bound: 'min', limit: 2 },
  { caseId: 'rref', peer: 'pytorch', measure: 'rate', bound: 'min', limit: 2 },
  { caseId: 'autograd', peer: 'pytorch', measure: 'latency', bound: 'max', limit: 0.7 },
  { caseId: '4MB', peer: 'pytorch', measure: 'throughput', bound: 'min', limit: 1.0 },
  { caseId: '4MB', peer: 'grpc', measure: 'throughput', bound: 'min', limit: 3 },
  { caseId: '400MB', peer: 'pytorch', measure: 'throughput', bound: 'min', limit: 1.0 },
  { caseId: '400MB', peer: 'grpc', measure: 'throughput', bound: 'min', limit: 3 },
];

/** Between two hosts: tensorbus against PyTorch RPC between the same two network namespaces. */
const TWO_HOST_TARGETS: RatioTarget[] = [
  { caseId: '4MB', peer: 'pytorch-2hosts', measure: 'throughput', bound: 'min', limit: 1.0 },
  { caseId: '400MB', peer: 'pytorch-2hosts', measure: 'throughput', bound: 'min', limit: 1.0 },
];

/** The targets of each tensorbus system. */
const TARGETS_OF: ReadonlyArray<[SystemId, RatioTarget[]]> = [
  ...TENSORBUS_SYSTEMS.map((system): [SystemId, RatioTarget[]] => [system, SAME_HOST_TARGETS]),
  ['tensorbus-2hosts', TWO_HOST_TARGETS],
];

/** Peak resident memory of each process in the 400 MB round trip ≤ 3x the payload. */
export const RSS_LIMIT = 3;

/** The outcome of one target for one tensorbus system. */
export interface TargetOutcome {
  /** The case the target is about. */
  caseId: string;
  /** What is required, in words: `latency ≤0.5x PyTorch RPC`. */
  target: string;
  system: SystemId;
  /** The measured ratio (NaN when a figure is missing). */
  ratio: number;
  status: 'PASS' | 'FAIL' | 'n/a';
  /** Why 'n/a', or which process a memory target is about. */
  note?: string;
}

function describe(t: RatioTarget): string {
  const what = t.measure === 'latency' ? 'latency' : t.measure === 'throughput' ? 'throughput' : t.caseId === 'rref' ? 'cycles/s' : 'calls/s';
  return `${what} ${t.bound === 'max' ? '≤' : '≥'}${t.limit.toFixed(1)}x ${SYSTEM_SHORT[t.peer]}`;
}

function ratioOf(t: RatioTarget, mine: CaseResult | undefined, peer: CaseResult | undefined): number {
  if (!mine || !peer || mine.skipped || peer.skipped) return Number.NaN;
  if (t.measure === 'rate') return (mine.perSecond ?? Number.NaN) / (peer.perSecond ?? Number.NaN);
  const a = mine.medianMs ?? Number.NaN;
  const b = peer.medianMs ?? Number.NaN;
  return t.measure === 'latency' ? a / b : b / a;
}

function status(ratio: number, bound: 'max' | 'min', limit: number): TargetOutcome['status'] {
  if (!Number.isFinite(ratio)) return 'n/a';
  return (bound === 'max' ? ratio <= limit : ratio >= limit) ? 'PASS' : 'FAIL';
}

/**
 * Evaluates every target for each tensorbus system that ran: on one host
 * against the peers there; between two hosts against PyTorch RPC between the
 * same two hosts. Peak memory: each process but the nats-server.
 */
export function evaluateTargets(results: CaseResult[], peaks: PeakRecord[], payloadBytes: number): TargetOutcome[] {
  const find = (caseId: string, system: SystemId) => results.find((r) => r.caseId === caseId && r.system === system);
  const out: TargetOutcome[] = [];
  for (const [system, ratioTargets] of TARGETS_OF) {
    if (!results.some((r) => r.system === system)) continue;
    for (const t of ratioTargets) {
      const mine = find(t.caseId, system);
      const peer = find(t.caseId, t.peer);
      const ratio = ratioOf(t, mine, peer);
      const missing = !mine ? 'not run' : mine.skipped ? mine.skipped : !peer ? `${SYSTEM_SHORT[t.peer]} not run` : peer.skipped ? `${SYSTEM_SHORT[t.peer]}: ${peer.skipped}` : undefined;
      out.push({ caseId: t.caseId, target: describe(t), system, ratio, status: status(ratio, t.bound, t.limit), ...(Number.isFinite(ratio) ? {} : { note: missing }) });
    }
    const mine = peaks.filter((p) => p.system === system && p.role !== 'nats-server');
    if (mine.length === 0) out.push({ caseId: '400MB', target: `peak RSS ≤${RSS_LIMIT.toFixed(1)}x payload`, system, ratio: Number.NaN, status: 'n/a', note: '400 MB case not run' });
    for (const peak of mine) {
      const ratio = peak.peakBytes / payloadBytes;
      out.push({ caseId: '400MB', target: `peak RSS ≤${RSS_LIMIT.toFixed(1)}x payload`, system, ratio, status: status(ratio, 'max', RSS_LIMIT), note: peak.role });
    }
  }
  return out;
}
