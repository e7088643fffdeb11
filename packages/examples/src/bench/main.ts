/**
 * `npm run bench`: tensorbus measured against its peers in one run, on
 * loopback. Starts an embedded nats-server, the processes of each system
 * (tensorbus over NATS: a driver and a callee process; tensorbus in-process;
 * raw NATS, gRPC-js and raw TCP: a client and a server process each), runs
 * every case on every system (a browser tab in headless Chromium calling a
 * Node worker and called by one over the server's WebSocket port, beside
 * Node to Node through the bus alone: no-op and 4 MB) with the PyTorch RPC
 * anchor script of the case run in each block, the growth study and the 400 MB case with peak memory, then the two-host part
 * (4 MB and 400 MB between two network namespaces joined by a veth pair,
 * tensorbus and PyTorch RPC; see two-hosts.ts), then writes
 * `bench.json`, `bench.md` and `bench-rtt.svg` to `--out` (default out/bench).
 *
 * A full run also rewrites the generated part of docs/performance.md (tables,
 * chart, the sentences that quote figures); a partial one says why it does
 * not, unless `--allow-partial`.
 *
 * Then the application cases (apps/): the RL, parameter-server and pipeline
 * examples run as a user runs them, on this build and on the `--baseline`
 * build in turn, and PyTorch's RPC RL example beside the RL one.
 *
 *   npm run bench -- [--quick] [--only noop,4KB,...,apps] [--systems tensorbus-nats,tcp,...] [--out dir]
 *                    [--baseline <git rev> | --no-baseline] [--doc file | --no-doc] [--allow-partial]
 *   npm run bench -- --experiment <name | list> [--rounds N] [--quick] [--no-doc]
 *                    (a data-plane A/B experiment instead: experiments/experiment-command.ts)
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNatsServer, type NatsServer } from '@tensorbus/nats-transport';
import { baselineBuild, prepareBaseline } from './apps/baseline-build.js';
import { APP_CASES } from './apps/app-cases.js';
import type { AppReport } from './apps/app-report.js';
import { runApps } from './apps/run-apps.js';
import { APPS_ID, CASES, GROWTH_ID, PEAK_MEMORY_BYTES, TWO_HOST_CASE_IDS, type BenchCase } from './cases.js';
import { experimentCommand } from './experiments/experiment-command.js';
import { runGrowth } from './growth.js';
import { loadNow, machineInfo, versions } from './machine.js';
import { parseOptions } from './options.js';
import { writeRoundTripChart } from './report/chart.js';
import { renderMarkdown } from './report/markdown.js';
import { writePerformanceDoc } from './report/performance-doc.js';
import { evaluateTargets } from './report/targets.js';
import type { BenchReport, CaseResult, GrowthRecord, MissingSystem, PeakRecord } from './results.js';
import { Progress, runCase, runPeakCase, runPytorchCase, runPytorchRoundTrip, type BlockPeer } from './runner.js';
import { runsCase, startNodeSystem, type NodeSystem, type NodeSystemId } from './systems/node-systems.js';
import { PYTORCH_MISSING, torchAvailability } from './systems/pytorch.js';
import { BROWSER_SYSTEMS, SYSTEM_IDS, SYSTEM_LABELS, TWO_HOST_SYSTEMS } from './systems/system-ids.js';
import { runTwoHosts } from './two-hosts.js';

/** max_payload of the embedded nats-server: the most nats-server allows, so 40 MB fits in one message. */
const NATS_MAX_PAYLOAD = 64 * 1024 * 1024;

process.on('SIGINT', () => process.exit(130));
if (process.argv.includes('--experiment')) {
  // A data-plane A/B experiment instead of the benchmark (experiments/).
  await experimentCommand(process.argv.slice(2));
  process.exit(0);
}
const options = parseOptions(process.argv.slice(2));
const started = new Date();
const selected = SYSTEM_IDS.filter((s) => options.systems.has(s));
const machine = machineInfo();
const versionInfo = versions();
console.log(`tensorbus benchmark (${options.quick ? 'quick' : 'full'}): cases ${[...options.cases].join(', ')}`);
console.log(`systems: ${selected.map((s) => SYSTEM_LABELS[s]).join(', ')}`);
console.log(`machine: ${String(machine.cpus)}, ${String(machine.memory)}, load ${String(machine.loadStart)}`);

const missing: MissingSystem[] = [];
const results: CaseResult[] = [];
const peaks: PeakRecord[] = [];
let growth: GrowthRecord[] = [];

/** torch imports (asked when a PyTorch system is selected); the one-host PyTorch runs also need 'pytorch' selected. */
let torchOk = false;
if (options.systems.has('pytorch') || options.systems.has('pytorch-2hosts')) {
  const torch = torchAvailability();
  versionInfo.torch = torch.version;
  versionInfo.python = torch.python;
  torchOk = torch.version !== undefined;
  if (!torchOk) {
    console.log(PYTORCH_MISSING);
    console.log(`  (${torch.reason})`);
    if (options.systems.has('pytorch')) missing.push({ system: 'pytorch', reason: PYTORCH_MISSING });
  }
}

/** Whether any case but the application ones runs (`--only apps` starts no system). */
const microCases = [...options.cases].some((id) => id !== APPS_ID);
let nats: NatsServer | undefined;
const browsers = BROWSER_SYSTEMS.some((id) => options.systems.has(id));
if (microCases && (browsers || (['tensorbus-nats', 'tensorbus-nats-no-poll', 'nats'] as const).some((id) => options.systems.has(id)))) {
  // The browser systems' tabs reach it over WebSocket (loopback, no TLS), with the same max_payload.
  nats = await startNatsServer({ maxPayload: NATS_MAX_PAYLOAD, ...(browsers ? { websocket: { quiet: true } } : {}) });
  console.log(`nats-server ${versionInfo['nats-server'] ?? ''} on ${nats.url}${nats.wsUrl ? ` and ${nats.wsUrl}` : ''}, max_payload ${NATS_MAX_PAYLOAD / (1 << 20)} MB`);
}

const systems: NodeSystem[] = [];
const nodeSystemIds = microCases ? selected.filter((id): id is NodeSystemId => id !== 'pytorch' && !TWO_HOST_SYSTEMS.includes(id)) : [];
for (const id of nodeSystemIds) {
  console.log(`starting ${SYSTEM_LABELS[id]} ...`);
  try {
    systems.push(await startNodeSystem(id, nats ? { url: nats.url, pid: nats.pid, wsUrl: nats.wsUrl } : undefined));
  } catch (error) {
    console.log(`  ${SYSTEM_LABELS[id]} could not start: ${(error as Error).message}`);
    missing.push({ system: id, reason: `could not start: ${(error as Error).message}` });
  }
}
const tensorbusCaller = systems.find((s) => s.id.startsWith('tensorbus'))?.caller;
const tfjsBackend = tensorbusCaller ? await tensorbusCaller.request<string>('backend') : undefined;
if (tfjsBackend) console.log(`TensorFlow.js backend of the tensorbus processes: ${tfjsBackend}`);
const natsCaller = systems.find((s) => s.id === 'tensorbus-nats')?.caller;
const sameHostPath = natsCaller ? await natsCaller.request<string>('sameHost') : undefined;
if (sameHostPath) console.log(`tensorbus over NATS, calls between its two processes: ${sameHostPath}`);

const tensorCounts = async () => {
  const counts: Record<string, unknown> = {};
  for (const system of systems.filter((s) => s.id.startsWith('tensorbus'))) {
    counts[system.id] = await system.caller.request('tensors').catch((error: Error) => error.message);
  }
  return counts;
};
const tensorsBefore = await tensorCounts();

const wanted = CASES.filter((c) => options.cases.has(c.id));
const mainCases = wanted.filter((c) => c.bytes !== PEAK_MEMORY_BYTES);
const peakCase = wanted.find((c) => c.bytes === PEAK_MEMORY_BYTES);
const runs = (c: BenchCase) => systems.filter((s) => runsCase(s, c)).length;
const twoHostCases = wanted.filter((c) => TWO_HOST_CASE_IDS.includes(c.id));
const twoHostTensorbus = options.systems.has('tensorbus-2hosts') && twoHostCases.length > 0;
const progress = new Progress(mainCases.length + (peakCase ? runs(peakCase) : 0) + (twoHostTensorbus ? twoHostCases.length : 0));

// 1. Every case but the largest, case by case, the systems' blocks
//    interleaved (a burst of load from elsewhere hits them alike), and
//    PyTorch RPC's anchor script (bench-anchors/) run once in each block
//    (each block starting one system later than the one before),
//    warmed up as tensorbus is for the whole case.
const torchHere = torchOk && options.systems.has('pytorch');
for (const c of mainCases) {
  const peer: BlockPeer | undefined = torchHere ? { system: 'pytorch', run: () => runPytorchCase(c, options.quick) } : undefined;
  const caseResults = await runCase(c, systems, options.quick, progress, peer);
  results.push(...caseResults);
  const torchFailed = caseResults.find((r) => r.system === 'pytorch' && r.skipped);
  if (torchFailed && !missing.some((m) => m.system === 'pytorch')) missing.push({ system: 'pytorch', reason: torchFailed.skipped! });
}

// 2. Growth: 1..16 callers calling one callee.
if (options.cases.has(GROWTH_ID)) {
  const grown = systems.filter((s) => s.id === 'tensorbus-nats' || s.id === 'tensorbus-local' || s.id === 'nats');
  growth = await runGrowth(grown, nats?.url, options.quick);
}

// Leak check: tensors alive in the tensorbus processes before and after the cases.
const liveTensors = { before: tensorsBefore, after: await tensorCounts() };
console.log(`tensors alive in the tensorbus processes: ${JSON.stringify(liveTensors)}`);

// 3. The largest round trip, with the peak memory of every process; each
//    system stops right after, so the next does not share the machine with
//    its multi-GB heaps.
for (const system of systems) {
  if (peakCase && runsCase(system, peakCase)) {
    const { result, peaks: measured } = await runPeakCase(system, peakCase, options.quick, progress);
    results.push(result);
    peaks.push(...measured);
    for (const p of measured) console.log(`        peak RSS of ${p.role}: ${(p.peakBytes / (1 << 20)).toFixed(0)} MB`);
  }
  await system.stop();
}
if (peakCase && torchHere) {
  console.log(`PyTorch RPC: torch_rpc.py ${peakCase.bytes} (peak memory of its workers) ...`);
  try {
    const torch = await runPytorchRoundTrip(peakCase, options.quick, true);
    results.push({ caseId: peakCase.id, system: 'pytorch', medianMs: torch.medianMs });
    peaks.push(...torch.peaks);
    console.log(`        -> median ${torch.medianMs.toFixed(0)} ms`);
    for (const p of torch.peaks) console.log(`        peak RSS of ${p.role}: ${(p.peakBytes / (1 << 20)).toFixed(0)} MB`);
  } catch (error) {
    console.log(`  PyTorch RPC 400 MB failed: ${(error as Error).message}`);
    results.push({ caseId: peakCase.id, system: 'pytorch', skipped: `failed: ${(error as Error).message}` });
  }
}
await nats?.stop();

// 4. Between two hosts: two network namespaces joined by a veth pair, made here and removed after.
const twoHosts = await runTwoHosts(
  {
    cases: twoHostCases,
    tensorbus: twoHostTensorbus,
    pytorch: options.systems.has('pytorch-2hosts'),
    pytorchMissing: torchOk ? undefined : PYTORCH_MISSING,
    quick: options.quick,
  },
  progress,
);
results.push(...twoHosts.results);
peaks.push(...twoHosts.peaks);
missing.push(...twoHosts.missing);

// 5. The applications: the examples as a user runs them, this build against the baseline build and PyTorch.
let apps: AppReport | undefined;
if (options.cases.has(APPS_ID)) {
  console.log('applications: the RL, parameter-server and pipeline examples through tensorbus launch ...');
  // This file is packages/examples/dist/src/bench/main.js: the repository is five levels up.
  const repo = fileURLToPath(new URL('../../../../../', import.meta.url));
  let baseline: ReturnType<typeof prepareBaseline> | undefined;
  if (options.baseline) {
    try {
      baseline = prepareBaseline(repo, options.baseline);
    } catch (error) {
      console.log(`  baseline ${options.baseline} could not be built: ${(error as Error).message}`);
    }
  }
  const results = await runApps({ label: 'this build', root: repo }, baseline && baselineBuild(baseline), {
    quick: options.quick,
    pytorch: torchHere,
    runs: options.appRuns,
  });
  apps = {
    baseline: baseline && { rev: baseline.rev, commit: baseline.commit },
    sameProgram: baseline ? APP_CASES.filter((c) => c.sameProgram).map((c) => c.id) : [],
    stretches: Object.fromEntries(APP_CASES.map((c) => [c.id, c.stretch(options.quick)])),
    results,
  };
}

// 6. The report.
const targets = evaluateTargets(results, peaks, PEAK_MEMORY_BYTES);
const report: BenchReport = {
  started: started.toISOString(),
  seconds: (Date.now() - started.getTime()) / 1000,
  quick: options.quick,
  command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
  machine: { ...machine, loadEnd: loadNow() },
  versions: versionInfo,
  tfjsBackend,
  sameHostPath,
  twoHosts: twoHosts.setup.setup ? twoHosts.setup : undefined,
  natsMaxPayload: nats ? NATS_MAX_PAYLOAD : undefined,
  systems: selected,
  missing,
  results,
  peaks,
  peakPayloadBytes: PEAK_MEMORY_BYTES,
  growth,
  targets,
  liveTensors,
  apps,
};
mkdirSync(options.out, { recursive: true });
const jsonPath = join(options.out, 'bench.json');
const mdPath = join(options.out, 'bench.md');
writeFileSync(jsonPath, JSON.stringify(report, null, 2));
const markdown = renderMarkdown(report, targets);
writeFileSync(mdPath, `${markdown}\n`);
const chartPath = writeRoundTripChart(join(options.out, 'bench-rtt.svg'), results, selected);
console.log(`\n${markdown}\n`);
console.log(`results written to ${jsonPath}, ${mdPath}, chart ${chartPath} (${report.seconds.toFixed(0)} s)`);
if (options.doc) {
  const outcome = writePerformanceDoc(options.doc, report, targets, options.allowPartial);
  if (outcome.written) console.log(`${outcome.doc} rewritten from this run (generated part), chart ${outcome.chart}`);
  else console.log(`${options.doc} left unchanged: not a full run (--allow-partial writes it anyway):\n${outcome.reasons.map((r) => `  - ${r}`).join('\n')}`);
}
process.exit(0);
