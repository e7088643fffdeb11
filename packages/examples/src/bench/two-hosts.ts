/**
 * The two-host part of the benchmark: makes two network namespaces joined by
 * a veth pair (the hosts A and B: no loopback, no address and no shared
 * memory path in common; TCP between them as between machines), runs
 * tensorbus there (nats-server and the driver in A, the callee in B, each
 * data port on its host's veth address) and PyTorch RPC (rank 0 in A, rank 1
 * in B), the identity of 4 MB and 400 MB with the peak memory of each
 * process, and removes the namespaces. PyTorch's 4 MB runs once in each of
 * tensorbus's blocks, as on one host; its 400 MB runs after, with the peak
 * memory of its ranks. Where they cannot be made (not root,
 * no `ip`), it says why and the two systems are missing: the run is partial,
 * never failed.
 * @module
 */
import { namespacesRefused, TwoHosts, type NsProcess, type TwoHostsOptions } from '@tensorbus/nats-transport/testing';
import type { DirectStats } from '@tensorbus/nats-transport';
import { PEAK_MEMORY_BYTES, type BenchCase, type Repetitions } from './cases.js';
import { BenchChild } from './process/bench-child.js';
import type { CaseResult, MissingSystem, PeakRecord, TwoHostSetup } from './results.js';
import { runCase, runPeakCase, type BlockPeer, type Progress } from './runner.js';
import { system, type NodeSystem } from './systems/node-systems.js';
import { PYTORCH_TWO_HOST_PATH, runPytorchTwoHosts } from './systems/pytorch-two-hosts.js';
import { SYSTEM_LABELS, type SystemId } from './systems/system-ids.js';

/** The /24 of the veth pair (the two-host tests use 10.211.0; any private range inside our own namespaces works). */
const SUBNET = '10.213.0';

/**
 * Repetitions of a case up to 8 MB between the hosts, for both systems (the
 * PyTorch script runs as many): 300 round trips after 300 of warm-up. As in
 * the cases on one host, the figures are taken once a process has settled:
 * a training loop runs far longer than its first second. From a fresh pair
 * of processes in two namespaces, tensorbus's 4 MB round trip (medians of
 * each 100 calls) went 3.76, 3.07, 2.41, 2.27, 2.21 ms, and 4.82, 5.09,
 * 3.41, 3.45, 3.51, 2.83 ms: V8 compiles the call path in tiers and the
 * lanes' TCP windows grow, both over the first few hundred calls. PyTorch
 * RPC's, per 50 calls, went 3.14, 3.38, 3.41, 3.26, 2.67, 2.85 ms and 3.84,
 * 3.62, 3.50, 3.56, 3.45, 3.36 ms. With 30 calls of warm-up the median
 * measured mostly that settling: 0.67–0.93x PyTorch RPC's throughput in
 * six runs, where with 300 it was 1.0x, 1.2x, 0.73x and 1.1x.
 */
export const TWO_HOST_STEADY: Repetitions = { warmup: 300, reps: 300, blocks: 3 };

/** `c` as run between the hosts: the steady repetitions for a full run's cases up to 8 MB. */
function betweenHosts(c: BenchCase, quick: boolean): BenchCase {
  return !quick && c.bytes !== undefined && c.bytes <= 8 * 2 ** 20 ? { ...c, repetitions: TWO_HOST_STEADY } : c;
}

/** What the two-host part measured. */
export interface TwoHostRun {
  results: CaseResult[];
  peaks: PeakRecord[];
  missing: MissingSystem[];
  setup: TwoHostSetup;
}

/** What to run between the hosts. */
export interface TwoHostPlan {
  /** The identity cases asked for (4 MB, 400 MB). */
  cases: BenchCase[];
  /** Whether each system was selected: tensorbus-2hosts, pytorch-2hosts. */
  tensorbus: boolean;
  pytorch: boolean;
  /** Why PyTorch cannot run at all (not installed), when so. */
  pytorchMissing?: string;
  quick: boolean;
  /** Where the namespaces are made (the `ip` command, the subnet). */
  hosts?: TwoHostsOptions;
  /** The interpreter and script PyTorch's ranks run (tests give a stand-in; default: python3 and torch_rpc_two_hosts.py). */
  pytorchCommand?: { python?: string; script?: string };
}

function say(text: string): void {
  console.log(text);
}

/** "direct TCP between the hosts' data ports (40 calls), none through shared memory", from the driver's counts. */
export function describePath(stats: DirectStats | null): string {
  if (!stats) return 'n/a (no data-plane counts)';
  const shared = stats.sharedRequests + stats.sharedReplies;
  const over = stats.calls > 0 ? `direct TCP between the hosts' data ports (${stats.calls} calls, warm-up included)` : 'NATS only (no direct call)';
  return `${over}, ${shared === 0 ? 'none' : String(shared)} through shared memory`;
}

/**
 * PyTorch RPC between the hosts as a peer of case `c`'s blocks: one run of its
 * script for `c` alone in each block (each run warms up as the script does).
 */
function pytorchBetween(hosts: TwoHosts, c: BenchCase, command: TwoHostPlan['pytorchCommand']): BlockPeer {
  return {
    system: 'pytorch-2hosts',
    run: async () => ({ medianMs: (await runPytorchTwoHosts(hosts, [c.bytes!], () => c.id, command)).results[0]!.medianMs }),
  };
}

/**
 * tensorbus between the hosts; with `withPytorch`, PyTorch RPC takes part in
 * the blocks of every case but the peak-memory one (see runner.ts, `runCase`).
 */
async function tensorbusBetween(hosts: TwoHosts, plan: TwoHostPlan, progress: Progress, withPytorch: boolean): Promise<{ results: CaseResult[]; peaks: PeakRecord[]; path: string }> {
  const [addressA, addressB] = hosts.addresses;
  // Host A: the nats-server (max_payload as the one-host part's) and the driver; host B: the callee.
  const server: NsProcess = await hosts.natsServer(0, `listen: ${addressA}:4222\nmax_payload: ${64 * 1024 * 1024}`);
  const natsUrl = `nats://${addressA}:4222`;
  const callee = await BenchChild.start({
    label: 'tensorbus callee (host B)',
    script: 'systems/tensorbus-callee.js',
    env: { NATS_URL: natsUrl, TENSORBUS_BENCH_DIRECT_HOST: addressB },
    launcher: (command, args) => hosts.wrap(1, command, args),
  });
  const caller = await BenchChild.start({
    label: 'tensorbus driver (host A)',
    script: 'systems/tensorbus-caller.js',
    args: ['--transport', 'nats'],
    env: { NATS_URL: natsUrl, TENSORBUS_BENCH_DIRECT_HOST: addressA },
    launcher: (command, args) => hosts.wrap(0, command, args),
  }).catch(async (error: Error) => {
    await callee.stop();
    throw error;
  });
  const running: NodeSystem = system('tensorbus-2hosts', caller, [callee], new Set(['latency']), [
    { role: 'driver (host A)', pid: caller.pid },
    { role: 'callee (host B)', pid: callee.pid },
    { role: 'nats-server', pid: server.child.pid! },
  ]);
  const results: CaseResult[] = [];
  const peaks: PeakRecord[] = [];
  try {
    for (const c of plan.cases.filter((x) => x.bytes !== PEAK_MEMORY_BYTES)) {
      results.push(...(await runCase(betweenHosts(c, plan.quick), [running], plan.quick, progress, withPytorch ? pytorchBetween(hosts, c, plan.pytorchCommand) : undefined)));
    }
    const peakCase = plan.cases.find((x) => x.bytes === PEAK_MEMORY_BYTES);
    if (peakCase) {
      const measured = await runPeakCase(running, peakCase, plan.quick, progress);
      results.push(measured.result);
      peaks.push(...measured.peaks);
      for (const p of measured.peaks) say(`        peak RSS of ${p.role}: ${(p.peakBytes / (1 << 20)).toFixed(0)} MB`);
    }
    const path = describePath(await caller.request<DirectStats | null>('path'));
    return { results, peaks, path };
  } finally {
    await running.stop();
  }
}

/**
 * Runs the two-host part (see the module). Never throws: what fails is
 * reported as a missing system or a skipped figure, with the reason.
 */
export async function runTwoHosts(plan: TwoHostPlan, progress: Progress): Promise<TwoHostRun> {
  const out: TwoHostRun = { results: [], peaks: [], missing: [], setup: { setup: '' } };
  const selected: SystemId[] = [...(plan.tensorbus ? ['tensorbus-2hosts' as const] : []), ...(plan.pytorch ? ['pytorch-2hosts' as const] : [])];
  if (selected.length === 0 || plan.cases.length === 0) return out;
  const refused = namespacesRefused(plan.hosts);
  if (refused) {
    say(`two hosts: not measured: ${refused}`);
    out.setup.setup = `Not measured: ${refused}`;
    for (const s of selected) out.missing.push({ system: s, reason: `two hosts not made: ${refused}` });
    return out;
  }
  let hosts: TwoHosts;
  try {
    hosts = new TwoHosts({ subnet: SUBNET, ...plan.hosts });
  } catch (error) {
    const reason = `two hosts not made: ${(error as Error).message.split('\n')[0]}`;
    say(`two hosts: ${reason}`);
    out.setup.setup = reason;
    for (const s of selected) out.missing.push({ system: s, reason });
    return out;
  }
  out.setup.setup = `Hosts A (${hosts.addresses[0]}) and B (${hosts.addresses[1]}): network namespaces ${hosts.names.join(' and ')} made by the bench, joined by a veth pair, removed after`;
  say(`two hosts: ${out.setup.setup}`);
  const pytorchRuns = plan.pytorch && !plan.pytorchMissing;
  try {
    if (plan.tensorbus) {
      try {
        const measured = await tensorbusBetween(hosts, plan, progress, pytorchRuns);
        out.results.push(...measured.results);
        out.peaks.push(...measured.peaks);
        out.setup.tensorbusPath = measured.path;
        say(`        tensorbus between the hosts went over ${measured.path}`);
      } catch (error) {
        say(`  ${SYSTEM_LABELS['tensorbus-2hosts']} failed: ${(error as Error).message}`);
        out.missing.push({ system: 'tensorbus-2hosts', reason: `failed: ${(error as Error).message}` });
      }
    }
    const torchFailed = out.results.find((r) => r.system === 'pytorch-2hosts' && r.skipped);
    if (torchFailed) out.missing.push({ system: 'pytorch-2hosts', reason: torchFailed.skipped! });
    // What PyTorch has no figure of yet: the peak-memory case, or every case when tensorbus did not run.
    const left = plan.cases.filter((c) => !out.results.some((r) => r.system === 'pytorch-2hosts' && r.caseId === c.id));
    if (plan.pytorch && plan.pytorchMissing) {
      out.missing.push({ system: 'pytorch-2hosts', reason: plan.pytorchMissing });
    } else if (pytorchRuns && !torchFailed && left.length > 0) {
      const sizes = left.map((c) => c.bytes!);
      say(`PyTorch RPC between the hosts: rank 0 in A, rank 1 in B (${left.map((c) => c.id).join(', ')}, peak memory of both ranks) ...`);
      try {
        const measured = await runPytorchTwoHosts(hosts, sizes, (bytes) => left.find((c) => c.bytes === bytes)!.id, plan.pytorchCommand);
        out.results.push(...measured.results);
        out.peaks.push(...measured.peaks);
        out.setup.pytorchPath = PYTORCH_TWO_HOST_PATH;
        for (const r of measured.results) say(`        -> ${r.caseId}: median ${r.medianMs!.toFixed(2)} ms`);
        for (const p of measured.peaks) say(`        peak RSS of ${p.role}: ${(p.peakBytes / (1 << 20)).toFixed(0)} MB`);
      } catch (error) {
        say(`  ${SYSTEM_LABELS['pytorch-2hosts']} failed: ${(error as Error).message}`);
        out.missing.push({ system: 'pytorch-2hosts', reason: `failed: ${(error as Error).message}` });
      }
    }
  } finally {
    hosts.remove();
  }
  return out;
}
