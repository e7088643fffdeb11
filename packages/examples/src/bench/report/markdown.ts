/**
 * The benchmark's markdown report: each case's figure per system with the
 * ratios of tensorbus to each peer and the targets met or missed, the peak
 * memory of the largest round trip, and the growth study.
 * @module
 */
import { appSection } from '../apps/app-report.js';
import { CASES, TWO_HOST_CASE_IDS } from '../cases.js';
import type { BenchReport, CaseResult } from '../results.js';
import { BROWSER_CASE_IDS, BROWSER_SYSTEMS, PEER_SYSTEMS, SYSTEM_LABELS, SYSTEM_SHORT, TENSORBUS_SYSTEMS, TWO_HOST_SYSTEMS, type SystemId } from '../systems/system-ids.js';
import { formatFigure, formatMB, formatRate, formatRatio, formatTime } from './format.js';
import type { TargetOutcome } from './targets.js';

/** A markdown table; columns named in `left` (and the first) are left-aligned, the rest (figures) right-aligned. */
function table(header: string[], rows: string[][], left: string[] = []): string[] {
  const align = header.map((h, i) => (i === 0 || left.includes(h) ? '---' : '---:'));
  return [`| ${header.join(' | ')} |`, `| ${align.join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)];
}

/** tensorbus ÷ peer in the row's unit (times: tensorbus time ÷ peer time; rates: tensorbus rate ÷ peer rate). */
export function ratio(mine: CaseResult | undefined, peer: CaseResult | undefined): string {
  if (!mine || !peer || mine.skipped || peer.skipped) return '—';
  if (mine.perSecond !== undefined && peer.perSecond !== undefined) return formatRatio(mine.perSecond / peer.perSecond);
  if (mine.medianMs !== undefined && peer.medianMs !== undefined) return formatRatio(mine.medianMs / peer.medianMs);
  return '—';
}

function targetCell(targets: TargetOutcome[], caseId: string, system: SystemId): string {
  return targets
    .filter((t) => t.caseId === caseId && t.system === system && !t.target.startsWith('peak'))
    .map((t) => `${t.target}: **${t.status}**${Number.isFinite(t.ratio) ? ` (${formatRatio(t.ratio)})` : ''}`)
    .join('<br>');
}

/** The two-host table: each two-host case, tensorbus and PyTorch RPC between the same two namespaces, the ratio and the targets. */
function twoHostSection(
  report: BenchReport,
  targets: TargetOutcome[],
  cell: (caseId: string, system: SystemId) => string,
  find: (caseId: string, system: SystemId) => CaseResult | undefined,
): string[] {
  const [mine, peer] = TWO_HOST_SYSTEMS as [SystemId, SystemId];
  const ran = TWO_HOST_SYSTEMS.filter((s) => report.systems.includes(s));
  if (ran.length === 0) return [];
  const cases = CASES.filter((c) => TWO_HOST_CASE_IDS.includes(c.id) && ran.some((s) => find(c.id, s)));
  const setup = report.twoHosts;
  const out = ['## Between two hosts (two network namespaces joined by a veth pair)', ''];
  if (setup) {
    out.push(
      `${setup.setup}. tensorbus: ${setup.tensorbusPath ?? 'n/a'}. PyTorch RPC: ${setup.pytorchPath ?? 'n/a'}.`,
      '',
    );
  }
  if (cases.length === 0) {
    out.push('No figures: see the missing systems above.', '');
    return out;
  }
  const header = ['case', ...ran.map((s) => SYSTEM_SHORT[s]), `${SYSTEM_SHORT[mine]} ÷ ${SYSTEM_SHORT[peer]}`, 'targets'];
  out.push(...table(header, cases.map((c) => [c.title, ...ran.map((s) => cell(c.id, s)), ratio(find(c.id, mine), find(c.id, peer)), targetCell(targets, c.id, mine)]), ['targets']), '');
  return out;
}

/**
 * The browser table: no-op and 4 MB round trips between a tab and a Node
 * worker both ways, beside Node to Node through the bus alone and with the
 * direct plane (tensorbus NATS, the default), in the same run.
 */
function browserSection(report: BenchReport, cell: (caseId: string, system: SystemId) => string): string[] {
  const ran = BROWSER_SYSTEMS.filter((s) => report.systems.includes(s));
  if (ran.length === 0) return [];
  const columns = [...ran, ...(report.systems.includes('tensorbus-nats') ? (['tensorbus-nats'] as SystemId[]) : [])];
  const cases = CASES.filter((c) => BROWSER_CASE_IDS.has(c.id) && columns.some((s) => report.results.some((r) => r.caseId === c.id && r.system === s)));
  const out = [
    '## A browser tab over WebSocket',
    '',
    'A page in headless Chromium is the worker `tab` (the browser builds, nats-server\'s WebSocket port) and a Node worker the other end, ' +
      'each way; beside them two Node processes through the bus alone (direct plane off) and with the direct plane (the default). ' +
      'The same cases, repetitions and warm-up as every other row; all through the one nats-server.',
    '',
  ];
  if (cases.length === 0) return [...out, 'No figures: see the missing systems above.', ''];
  out.push(...table(['case', ...columns.map((s) => SYSTEM_SHORT[s])], cases.map((c) => [c.title, ...columns.map((s) => cell(c.id, s))])), '');
  return out;
}

/** Renders the report as markdown. */
export function renderMarkdown(report: BenchReport, targets: TargetOutcome[]): string {
  // The two-host and the browser systems have tables of their own.
  const systems = report.systems.filter((s) => !TWO_HOST_SYSTEMS.includes(s) && !BROWSER_SYSTEMS.includes(s));
  const missing = new Map(report.missing.map((m) => [m.system, m.reason]));
  const find = (caseId: string, system: SystemId) => report.results.find((r) => r.caseId === caseId && r.system === system);
  const cases = CASES.filter((c) => report.results.some((r) => r.caseId === c.id));
  const mine = TENSORBUS_SYSTEMS.filter((s) => systems.includes(s) && !missing.has(s));
  const peers = PEER_SYSTEMS.filter((s) => systems.includes(s));
  const lead = mine[0];
  const cell = (caseId: string, system: SystemId) => (missing.has(system) ? 'missing' : formatFigure(find(caseId, system)));

  const out: string[] = [
    `# tensorbus benchmark`,
    '',
    `${report.quick ? 'Quick (smoke-test) run' : 'Full run'} of \`${report.command}\`, ${report.started}, ${report.seconds.toFixed(0)} s.`,
    `Machine: ${String(report.machine.cpus)}, ${String(report.machine.memory)}, ${String(report.machine.os)}; Node ${String(report.versions.node)}; ` +
      `TensorFlow.js backend \`${report.tfjsBackend ?? 'n/a'}\`; tensorbus NATS processes reach each other through ${report.sameHostPath ?? 'n/a'}; nats-server ${report.versions['nats-server'] ?? 'n/a'} (max_payload ${report.natsMaxPayload ? formatMB(report.natsMaxPayload) : 'n/a'}); ` +
      `PyTorch ${report.versions.torch ?? 'missing'}. Load average at start ${String(report.machine.loadStart)}, at end ${String(report.machine.loadEnd)}.`,
    '',
    'Round trips are medians of sequential calls after a warm-up (µs/ms); rates are medians of rounds (calls/s).',
    'Ratios are tensorbus ÷ peer in the row\'s unit: for times lower is better, for rates higher is better.',
    '',
  ];
  for (const [system, reason] of missing) out.push(`- **${SYSTEM_LABELS[system]}: missing** — ${reason}`);
  if (missing.size > 0) out.push('');

  if (lead && cases.length > 0) {
    out.push(`## Each case per system (ratios and targets: ${SYSTEM_SHORT[lead]})`, '');
    const header = ['case', ...systems.map((s) => SYSTEM_SHORT[s]), ...peers.map((p) => `${SYSTEM_SHORT[lead]} ÷ ${SYSTEM_SHORT[p]}`), 'targets'];
    out.push(...table(header, cases.map((c) => [c.title, ...systems.map((s) => cell(c.id, s)), ...peers.map((p) => ratio(find(c.id, lead), find(c.id, p))), targetCell(targets, c.id, lead)]), ['targets']));
    out.push('');
  }
  for (const other of cases.length > 0 ? mine.slice(1) : []) {
    out.push(`## ${SYSTEM_SHORT[other]} ÷ peers`, '');
    const header = ['case', ...peers.map((p) => `÷ ${SYSTEM_SHORT[p]}`), 'targets'];
    out.push(...table(header, cases.map((c) => [c.title, ...peers.map((p) => ratio(find(c.id, other), find(c.id, p))), targetCell(targets, c.id, other)]), ['targets']));
    out.push('');
  }

  out.push(...twoHostSection(report, targets, cell, find));
  out.push(...browserSection(report, cell));
  out.push(...appSection(report.apps));

  if (cases.length > 0 && targets.length > 0) {
    out.push('## Targets', '');
    const rows = targets.map((t) => [t.caseId, t.target, SYSTEM_SHORT[t.system], Number.isFinite(t.ratio) ? formatRatio(t.ratio) : '—', `**${t.status}**`, t.note ?? '']);
    out.push(...table(['case', 'target', 'system', 'measured', 'result', 'note'], rows, ['target', 'system', 'result', 'note']), '');
  }

  if (report.peaks.length > 0) {
    out.push(`## Peak resident memory, identity round trip of ${formatMB(report.peakPayloadBytes)}`, '');
    const rows = report.peaks.map((p) => [
      SYSTEM_SHORT[p.system],
      p.role,
      formatMB(p.peakBytes),
      p.startBytes !== undefined ? formatMB(p.startBytes) : '—',
      formatRatio(p.peakBytes / report.peakPayloadBytes),
      p.resetAtStart ? 'peak of the case' : 'peak of the process',
    ]);
    out.push(...table(['system', 'process', 'peak RSS', 'RSS at start', 'peak ÷ payload', 'measured as'], rows, ['process', 'measured as']), '');
  }

  if (report.growth.length > 0) {
    const grown = [...new Set(report.growth.map((g) => g.system))];
    const levels = [...new Set(report.growth.map((g) => g.workers))].sort((a, b) => a - b);
    out.push('## Growth: N callers calling one callee (no-op round trips, each caller one call after another)', '');
    const header = ['callers', ...grown.flatMap((s) => [`${SYSTEM_SHORT[s]} median`, `${SYSTEM_SHORT[s]} calls/s`])];
    const rows = levels.map((n) => [
      String(n),
      ...grown.flatMap((s) => {
        const g = report.growth.find((r) => r.system === s && r.workers === n);
        const base = report.growth.find((r) => r.system === s && r.workers === 1);
        if (!g) return ['—', '—'];
        const x = (v: number, b: number | undefined) => (b && n > 1 ? ` (${(v / b).toFixed(1)}x)` : '');
        return [`${formatTime(g.medianMs)}${x(g.medianMs, base?.medianMs)}`, `${formatRate(g.perSecond)}${x(g.perSecond, base?.perSecond)}`];
      }),
    ]);
    out.push(...table(header, rows), '');
    const spread = report.growth.filter((g) => g.system !== 'tensorbus-local' && g.processes > 0);
    if (spread.length > 0) {
      out.push(`Over NATS the callers are spread over ${[...new Set(spread.map((g) => `${g.workers}→${g.processes}`))].join(', ')} (callers→processes); in-process, all are agents of one process.`, '');
    }
  }
  return out.join('\n');
}
