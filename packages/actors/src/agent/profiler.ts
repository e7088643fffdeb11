/**
 * The RPC profiler (in the spirit of `torch.autograd.profiler.profile` with
 * RPC events): while a profile is recording, every call this agent makes is
 * recorded with its worker, function, bytes, and where its time went. A
 * profile exports as Chrome trace JSON (chrome://tracing, Perfetto).
 *
 * Cost: nothing is measured and nothing is added to calls while no profile of
 * the agent records (one check of an empty set per call). See docs/rpc.md.
 * @module
 */
import { InvalidArgumentError } from '@tensorbus/core';

/** One call, as the profile saw it. Times are in microseconds. */
export interface RpcEvent {
  /** `rpc#<function>(<caller> -> <worker>)`, as PyTorch names RPC events. */
  readonly name: string;
  /** The worker that ran the call. */
  readonly worker: string;
  /** The worker that made it (this agent). */
  readonly caller: string;
  /** The registered name of the function (or `tb.*` for protocol calls: RRefs, autograd). */
  readonly function: string;
  /** Bytes of the request and of the reply, as sent on the transport. */
  readonly requestBytes: number;
  readonly responseBytes: number;
  /** When the call started, µs since the profile started. */
  readonly startUs: number;
  /** The whole call, as the caller waited for it. */
  readonly durationUs: number;
  /** Encoding the request, on the caller. */
  readonly encodeUs: number;
  /**
   * On the callee, from the request's arrival to the function's start
   * (decoding, checks, waiting for the event loop); undefined when the callee
   * did not say (an error reply, or a report that failed its checks).
   */
  readonly queueUs: number | undefined;
  /** The function's own run on the callee, as the callee reports it; undefined as for `queueUs`. */
  readonly remoteUs: number | undefined;
  /**
   * The rest of the round trip: the bus both ways and the callee's encoding of
   * the reply (the round trip itself when the callee did not report).
   */
  readonly transportUs: number;
  /** Decoding the reply, on the caller. */
  readonly decodeUs: number;
  /** The call's error code when it failed (`REMOTE_ERROR`, `RPC_TIMEOUT`, …). */
  readonly error?: string;
}

/** Options of a profile. */
export interface ProfileOptions {
  /** Events kept at most; later calls are counted in `dropped`. Default 100,000. */
  maxEvents?: number;
}

/** What the callee reports of a profiled call: µs from arrival to start, and of the run. */
export interface RemoteTiming {
  queueUs: number;
  remoteUs: number;
}

/** The callee's report as it travels in a reply: `{ q, x }`, µs. */
export type WireTiming = { q: number; x: number };

/** The longest time a callee may report, µs (a day): anything beyond is not a measurement. */
const MAX_REPORTED_US = 86_400e6;

/**
 * The callee's report, checked: it comes from another worker, so it is taken
 * only as two finite non-negative numbers that together fit in the round trip
 * the caller measured; anything else is no report.
 */
export function checkRemoteTiming(value: unknown, roundTripUs: number): RemoteTiming | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { q, x } = value as Partial<WireTiming>;
  const ok = (n: unknown): n is number => typeof n === 'number' && Number.isFinite(n) && n >= 0 && n <= MAX_REPORTED_US;
  if (!ok(q) || !ok(x) || q + x > roundTripUs) return undefined;
  return { queueUs: q, remoteUs: x };
}

/** A recording of the calls an agent makes: from `agent.profile(fn)` or `agent.startProfile()`. */
export class RpcProfile {
  /** The calls recorded, in the order they ended. */
  readonly events: RpcEvent[] = [];
  /** Calls not kept because `maxEvents` were already recorded. */
  dropped = 0;
  /** performance.now() when recording started, ms. */
  readonly startedAt: number;
  private readonly maxEvents: number;
  private stopped = false;

  /** @internal */
  constructor(options: ProfileOptions, private readonly onStop: (profile: RpcProfile) => void) {
    const maxEvents = options.maxEvents ?? 100_000;
    if (!Number.isSafeInteger(maxEvents) || maxEvents < 0) throw new InvalidArgumentError(`maxEvents must be a non-negative integer, got ${String(maxEvents)}`);
    this.maxEvents = maxEvents;
    this.startedAt = performance.now();
  }

  /** True until {@link stop}. */
  get recording(): boolean {
    return !this.stopped;
  }

  /** Stops recording (calls still under way are recorded if they end before this). Idempotent. */
  stop(): this {
    if (!this.stopped) {
      this.stopped = true;
      this.onStop(this);
    }
    return this;
  }

  /** @internal Records one call that ended (`startedAt` in performance.now() ms). */
  add(event: Omit<RpcEvent, 'startUs'> & { startedAt: number }): void {
    if (this.stopped) return;
    if (this.events.length >= this.maxEvents) {
      this.dropped++;
      return;
    }
    const { startedAt, ...rest } = event;
    this.events.push({ ...rest, startUs: Math.max(0, (startedAt - this.startedAt) * 1000) });
  }

  /**
   * Totals per function and worker [key_averages]: calls, and summed µs of
   * each phase (the callee's phases over the calls that reported them).
   */
  byFunction(): Array<{ function: string; worker: string; calls: number; totalUs: number; encodeUs: number; queueUs: number; remoteUs: number; transportUs: number; decodeUs: number; requestBytes: number; responseBytes: number }> {
    const rows = new Map<string, ReturnType<RpcProfile['byFunction']>[number]>();
    for (const e of this.events) {
      const key = `${e.function}\0${e.worker}`;
      let row = rows.get(key);
      if (!row) rows.set(key, (row = { function: e.function, worker: e.worker, calls: 0, totalUs: 0, encodeUs: 0, queueUs: 0, remoteUs: 0, transportUs: 0, decodeUs: 0, requestBytes: 0, responseBytes: 0 }));
      row.calls++;
      row.totalUs += e.durationUs;
      row.encodeUs += e.encodeUs;
      row.queueUs += e.queueUs ?? 0;
      row.remoteUs += e.remoteUs ?? 0;
      row.transportUs += e.transportUs;
      row.decodeUs += e.decodeUs;
      row.requestBytes += e.requestBytes;
      row.responseBytes += e.responseBytes;
    }
    return [...rows.values()].sort((a, b) => b.totalUs - a.totalUs);
  }

  /**
   * The profile as a Chrome trace (`JSON.stringify` it into a file for
   * chrome://tracing or ui.perfetto.dev) [export_chrome_trace]: one complete
   * event (`ph: 'X'`, `ts`/`dur` in µs) per call on the caller's lanes, with its
   * encode and decode inside it, and the callee's queue and run on the callee's
   * lanes, placed half the transport time after the request left (the clocks
   * of two processes are not compared).
   */
  toChromeTrace(): { traceEvents: ChromeTraceEvent[]; displayTimeUnit: 'ms' } {
    const traceEvents: ChromeTraceEvent[] = [];
    const pids = new Map<string, number>();
    const pidOf = (worker: string): number => {
      let pid = pids.get(worker);
      if (pid === undefined) {
        pids.set(worker, (pid = pids.size + 1));
        traceEvents.push({ name: 'process_name', ph: 'M', pid, tid: 0, args: { name: worker } });
      }
      return pid;
    };
    // Calls overlap: each goes on the first lane free at its start, so events on one lane nest or follow.
    const lanes = new Map<number, number[]>();
    const laneOf = (pid: number, start: number, end: number): number => {
      let ends = lanes.get(pid);
      if (!ends) lanes.set(pid, (ends = []));
      let lane = ends.findIndex((e) => e <= start);
      if (lane < 0) lane = ends.push(end) - 1;
      else ends[lane] = end;
      return lane + 1;
    };
    const sorted = [...this.events].sort((a, b) => a.startUs - b.startUs);
    for (const e of sorted) {
      const pid = pidOf(e.caller);
      const tid = laneOf(pid, e.startUs, e.startUs + e.durationUs);
      const args = {
        worker: e.worker,
        function: e.function,
        requestBytes: e.requestBytes,
        responseBytes: e.responseBytes,
        encodeUs: e.encodeUs,
        queueUs: e.queueUs ?? null,
        remoteUs: e.remoteUs ?? null,
        transportUs: e.transportUs,
        decodeUs: e.decodeUs,
        ...(e.error ? { error: e.error } : {}),
      };
      traceEvents.push({ name: e.name, cat: 'rpc', ph: 'X', ts: e.startUs, dur: e.durationUs, pid, tid, args });
      traceEvents.push({ name: 'encode', cat: 'rpc.caller', ph: 'X', ts: e.startUs, dur: e.encodeUs, pid, tid });
      traceEvents.push({ name: 'decode', cat: 'rpc.caller', ph: 'X', ts: e.startUs + e.durationUs - e.decodeUs, dur: e.decodeUs, pid, tid });
      if (e.queueUs !== undefined && e.remoteUs !== undefined) {
        const remotePid = pidOf(e.worker);
        const arrival = e.startUs + e.encodeUs + e.transportUs / 2;
        const remoteTid = laneOf(remotePid, arrival, arrival + e.queueUs + e.remoteUs);
        traceEvents.push({ name: `${e.function} (queue)`, cat: 'rpc.callee', ph: 'X', ts: arrival, dur: e.queueUs, pid: remotePid, tid: remoteTid, args: { caller: e.caller } });
        traceEvents.push({ name: `${e.function}`, cat: 'rpc.callee', ph: 'X', ts: arrival + e.queueUs, dur: e.remoteUs, pid: remotePid, tid: remoteTid, args: { caller: e.caller } });
      }
    }
    return { traceEvents, displayTimeUnit: 'ms' };
  }
}

/** One event of the Chrome trace format. */
export interface ChromeTraceEvent {
  name: string;
  cat?: string;
  ph: 'X' | 'M';
  ts?: number;
  dur?: number;
  pid: number;
  tid: number;
  args?: Record<string, unknown>;
}

/** The profiles of one agent that are recording; the call client asks it whether to measure. */
export class Profiler {
  private readonly active = new Set<RpcProfile>();

  /** True while any profile records: the only thing an unprofiled call pays for. */
  get recording(): boolean {
    return this.active.size > 0;
  }

  /** Starts a profile, recording until its `stop()`. */
  start(options: ProfileOptions = {}): RpcProfile {
    const profile = new RpcProfile(options, (p) => this.active.delete(p));
    this.active.add(profile);
    return profile;
  }

  /** Records a call that ended into every recording profile. */
  record(event: Omit<RpcEvent, 'startUs'> & { startedAt: number }): void {
    for (const profile of this.active) profile.add(event);
  }
}
