/**
 * What the benchmark records: one figure per (case, system), the peak memory
 * of each process in the largest round trip, the growth study, and the whole
 * report written as JSON.
 * @module
 */
import type { AppReport } from './apps/app-report.js';
import type { SystemId } from './systems/system-ids.js';

/** The figure of one case on one system. */
export interface CaseResult {
  caseId: string;
  system: SystemId;
  /** Round-trip cases: median and spread, ms, over `n` repetitions. */
  medianMs?: number;
  p10Ms?: number;
  p90Ms?: number;
  n?: number;
  /** Round-trip cases of a peer run more than once (PyTorch's script): each run's median, ms; `medianMs` is their median. */
  runMediansMs?: number[];
  /** Round-trip cases: repetitions lost (no answer in time, or a failed transfer), counted as infinitely slow in the median. */
  timeouts?: number;
  /** Rate cases: median over the rounds, per second. */
  perSecond?: number;
  rounds?: number[];
  /** Why there is no figure. */
  skipped?: string;
}

/** Peak resident memory of one process during the peak-memory round trip. */
export interface PeakRecord {
  system: SystemId;
  role: string;
  pid: number;
  /** Peak resident set (VmHWM), bytes. */
  peakBytes: number;
  /** Resident set when the case started, bytes (undefined where it could not be read). */
  startBytes?: number;
  /** True when the peak was reset at the case's start; false: peak since the process started. */
  resetAtStart: boolean;
}

/** One level of the growth study. */
export interface GrowthRecord {
  system: SystemId;
  /** Caller workers calling the one callee. */
  workers: number;
  /** OS processes the callers were spread over. */
  processes: number;
  medianMs: number;
  p90Ms: number;
  perSecond: number;
}

/** A system that could not run, and why. */
export interface MissingSystem {
  system: SystemId;
  reason: string;
}

/** How the two-host part ran. */
export interface TwoHostSetup {
  /** The namespaces, the veth pair and their addresses, in words; or why they could not be made. */
  setup: string;
  /** What tensorbus's calls between the hosts went over (from the driver's data-plane counts). */
  tensorbusPath?: string;
  /** What PyTorch RPC was allowed to use between the hosts (TensorPipe transports and channels). */
  pytorchPath?: string;
}

/** The whole report (the JSON file). */
export interface BenchReport {
  started: string;
  seconds: number;
  quick: boolean;
  command: string;
  machine: Record<string, unknown>;
  versions: Record<string, string | undefined>;
  tfjsBackend: string | undefined;
  /** How tensorbus's two NATS processes reach each other beside the bus: shared memory or TCP. */
  sameHostPath: string | undefined;
  /** The two-host part: how the hosts were made, and what each system's calls went over between them. */
  twoHosts?: TwoHostSetup;
  natsMaxPayload: number | undefined;
  systems: SystemId[];
  missing: MissingSystem[];
  results: CaseResult[];
  peaks: PeakRecord[];
  peakPayloadBytes: number;
  growth: GrowthRecord[];
  targets: unknown[];
  /** The application cases (the examples as a user runs them), this build against the baseline build and PyTorch. */
  apps?: AppReport;
  /** Tensors alive in each tensorbus process (by system, then role) before and after the cases: the leak check. */
  liveTensors?: { before: Record<string, unknown>; after: Record<string, unknown> };
}
