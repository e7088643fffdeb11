/**
 * Writes the generated part of docs/performance.md from one run: the date and
 * exact command, the machine, the summary sentences (from
 * `performance-prose.ts`), the chart and the tables, between two markers.
 * Everything outside the markers is left as it is. A partial run (a system
 * missing, a case not run, a quick run, a target left unevaluated) is
 * refused unless the caller allows it explicitly, so the doc never presents a
 * partial run as the full one.
 * @module
 */
import { dirname, join } from 'node:path';
import { appTargets } from '../apps/app-report.js';
import { CASES, TWO_HOST_CASE_IDS } from '../cases.js';
import type { BenchReport } from '../results.js';
import { BROWSER_CASE_IDS, BROWSER_SYSTEMS, SYSTEM_IDS, SYSTEM_LABELS, TENSORBUS_SYSTEMS, TWO_HOST_SYSTEMS, type SystemId } from '../systems/system-ids.js';
import { writeRoundTripChart } from './chart.js';
import { formatMB } from './format.js';
import { generatedMarkers, replaceGeneratedPart } from './generated-part.js';
import { renderMarkdown } from './markdown.js';
import { fillTemplate, PROSE_TEMPLATE, proseValues } from './performance-prose.js';
import type { TargetOutcome } from './targets.js';

const MARKERS = generatedMarkers('npm run bench', 'packages/examples/src/bench/report/performance-doc.ts');
/** The line that opens the generated part of the doc. */
export const DOC_BEGIN = MARKERS.begin;
/** The line that closes it. */
export const DOC_END = MARKERS.end;
/** The chart's file, beside the doc. */
export const DOC_CHART = 'performance-rtt.svg';

/** Why a run is not a full one (empty: it is). */
export function partialReasons(report: BenchReport, targets: TargetOutcome[]): string[] {
  const reasons: string[] = [];
  if (report.quick) reasons.push('a quick run (--quick: few repetitions, no 400 MB case)');
  for (const system of SYSTEM_IDS) if (!report.systems.includes(system)) reasons.push(`${SYSTEM_LABELS[system]} not selected (--systems)`);
  for (const m of report.missing) reasons.push(`${SYSTEM_LABELS[m.system]} missing: ${m.reason}`);
  const casesOf = (system: SystemId) =>
    TWO_HOST_SYSTEMS.includes(system) ? CASES.filter((c) => TWO_HOST_CASE_IDS.includes(c.id))
    : BROWSER_SYSTEMS.includes(system) ? CASES.filter((c) => BROWSER_CASE_IDS.has(c.id))
    : CASES;
  for (const system of [...TENSORBUS_SYSTEMS, ...TWO_HOST_SYSTEMS, ...BROWSER_SYSTEMS]) {
    if (report.missing.some((m) => m.system === system)) continue;
    for (const c of casesOf(system)) {
      const result = report.results.find((r) => r.caseId === c.id && r.system === system);
      if (!result) reasons.push(`${c.title} not run on ${SYSTEM_LABELS[system]}`);
      else if (result.skipped) reasons.push(`${c.title} on ${SYSTEM_LABELS[system]}: ${result.skipped}`);
    }
  }
  if (report.growth.length === 0) reasons.push('growth study not run');
  if (report.peaks.length === 0) reasons.push('peak memory of the 400 MB round trip not measured');
  if (!report.apps) reasons.push('application cases not run');
  else if (!report.apps.baseline) reasons.push('application cases run without a baseline build (--baseline <git rev>)');
  for (const t of report.apps ? appTargets(report.apps.results) : []) if (t.status === 'n/a') reasons.push(`application target not evaluated: ${t.caseId} against ${t.peer}`);
  for (const t of targets) if (t.status === 'n/a') reasons.push(`target not evaluated: ${t.caseId} ${t.target} on ${SYSTEM_LABELS[t.system]} (${t.note ?? 'no figure'})`);
  return [...new Set(reasons)];
}

/** `2026-11-24 01:10 UTC`. */
function utc(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

/** `3 min 12 s`. */
function duration(seconds: number): string {
  const s = Math.round(seconds);
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

/** The generated part, between the markers. `partial`: the reasons to print when a partial run was allowed. */
export function renderGeneratedSection(report: BenchReport, targets: TargetOutcome[], partial: string[] = []): string {
  const m = report.machine;
  const v = report.versions;
  // The tables are bench.md's, its own heading and run line left out, one heading level down.
  const tables = renderMarkdown(report, targets).split('\n');
  const first = tables.findIndex((line) => line.startsWith('## '));
  const body = (first < 0 ? [] : tables.slice(first)).map((line) => (line.startsWith('## ') ? `#${line}` : line));
  const out = [
    partial.length > 0 ? '## The latest run (PARTIAL)' : '## The latest full run',
    '',
    `\`${report.command}\`, ${utc(report.started)}, ${duration(report.seconds)}. ` +
      `${String(m.cpus)} cores, ${String(m.memory)}, ${String(m.os)}; Node ${v.node ?? 'n/a'}; TensorFlow.js ${v['@tensorflow/tfjs-core'] ?? 'n/a'} on the \`${report.tfjsBackend ?? 'n/a'}\` backend; ` +
      `nats-server ${v['nats-server'] ?? 'n/a'} with max_payload ${report.natsMaxPayload ? formatMB(report.natsMaxPayload) : 'n/a'}; PyTorch ${v.torch ?? 'missing'} (python ${v.python ?? 'n/a'}); ` +
      `tensorbus's two NATS processes reach each other through ${report.sameHostPath ?? 'n/a'}. Load average ${String(m.loadStart)} at the start, ${String(m.loadEnd)} at the end.`,
    '',
  ];
  if (partial.length > 0) out.push('**This run is partial** (written with `--allow-partial`):', '', ...partial.map((r) => `- ${r}`), '');
  out.push(fillTemplate(PROSE_TEMPLATE, proseValues(report, targets)), '');
  out.push(`![Identity round-trip time against payload size, every system, log-log](${DOC_CHART})`, '');
  out.push(...body);
  return out.join('\n');
}

/** What {@link writePerformanceDoc} did. */
export type DocOutcome = { written: true; doc: string; chart: string } | { written: false; reasons: string[] };

/**
 * Replaces the generated part of the doc at `docPath` (between
 * {@link DOC_BEGIN} and {@link DOC_END}) and writes the chart beside it.
 * Leaves both unchanged, and says why, when the run is partial and
 * `allowPartial` is not set, or when the doc has no markers.
 */
export function writePerformanceDoc(docPath: string, report: BenchReport, targets: TargetOutcome[], allowPartial = false): DocOutcome {
  const partial = partialReasons(report, targets);
  if (partial.length > 0 && !allowPartial) return { written: false, reasons: partial };
  const refused = replaceGeneratedPart(docPath, MARKERS, renderGeneratedSection(report, targets, partial));
  if (refused !== undefined) return { written: false, reasons: [refused] };
  const chart = writeRoundTripChart(join(dirname(docPath), DOC_CHART), report.results, report.systems);
  return { written: true, doc: docPath, chart };
}
