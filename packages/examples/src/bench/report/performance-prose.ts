/**
 * The sentences of docs/performance.md that quote figures, as a template
 * whose `{{placeholders}}` are filled from one run's results. Prose outside
 * the generated part of the doc quotes no figures, so the doc cannot say
 * one thing in a table and another in a sentence.
 * @module
 */
import type { BenchReport, CaseResult, GrowthRecord } from '../results.js';
import type { SystemId } from '../systems/system-ids.js';
import { formatRate, formatRatio, formatTime } from './format.js';
import { ratio } from './markdown.js';
import type { TargetOutcome } from './targets.js';

/** The summary paragraph of the latest run. Edit here, not in the doc. */
export const PROSE_TEMPLATE = [
  'In short, over NATS (two processes, the deployment): {{targets_summary}} Between two hosts: {{hosts_summary}}',
  '',
  '- **No-op round trip:** {{nats_noop}} against PyTorch RPC\'s {{torch_noop}} ({{noop_vs_torch}}; target ≤0.5x), raw TCP\'s {{tcp_noop}} ({{noop_vs_tcp}}; target ≤2x) and raw NATS\'s {{raw_nats_noop}} ({{noop_vs_nats}}; target ≤1.2x).',
  '- **Busy polling off** (`TENSORBUS_BUSY_POLL_US=0`; on by default; same run): no-op {{no_poll_noop}}, 4 MB {{no_poll_4mb}}, RRef cycle {{no_poll_rref}}, autograd step {{no_poll_autograd}}; its ratio to PyTorch RPC\'s no-op {{no_poll_noop_vs_torch}} and to raw TCP\'s {{no_poll_noop_vs_tcp}}.',
  '- **4 MB identity:** {{nats_4mb}} against PyTorch RPC\'s {{torch_4mb}}: {{tput_4mb_vs_torch}} its throughput (target ≥1.0x), and {{tput_4mb_vs_grpc}} gRPC-js\'s (target ≥3x).',
  '- **400 MB identity:** {{nats_400mb}} against PyTorch RPC\'s {{torch_400mb}}: {{tput_400mb_vs_torch}} its throughput (target ≥1.0x), and {{tput_400mb_vs_grpc}} gRPC-js\'s (target ≥3x).',
  '- **Small async calls, 64 in flight:** {{nats_async}} against PyTorch RPC\'s {{torch_async}} ({{async_vs_torch}}; target ≥2x).',
  '- **RRef cycle** (`remote` + `toHere` + release): {{nats_rref}} against PyTorch RPC\'s {{torch_rref}} ({{rref_vs_torch}}; target ≥2x).',
  '- **Distributed autograd step** (`RemoteModule` forward, local loss, `backward`, `getGradients`, context exit): {{nats_autograd}} against PyTorch RPC\'s {{torch_autograd}} ({{autograd_vs_torch}}; target ≤0.7x).',
  '- **Peak memory of the 400 MB round trip:** at most {{nats_peak}} the payload in a tensorbus process (target ≤3x); PyTorch RPC\'s caller {{torch_peak}}.',
  '- **Between two hosts** (two network namespaces joined by a veth pair): 4 MB {{hosts_4mb}} against PyTorch RPC\'s {{torch_hosts_4mb}} between the same hosts: {{hosts_4mb_vs_torch}} its throughput (target ≥1.0x); 400 MB {{hosts_400mb}} against {{torch_hosts_400mb}}: {{hosts_400mb_vs_torch}} (target ≥1.0x); peak memory at most {{hosts_peak}} the payload in a tensorbus process (target ≤3x), PyTorch RPC\'s caller {{torch_hosts_peak}}.',
  '- **In-process** (`localTransport`): no-op {{local_noop}}, 4 MB {{local_4mb}}, 400 MB {{local_400mb}}.',
  '- **Growth, 1 → 16 callers:** over NATS the total rate grows {{growth_rate}} and the median latency {{growth_latency}}; raw NATS {{raw_growth_rate}} and {{raw_growth_latency}}.',
  '- **Leak check:** tensors alive in the tensorbus processes before → after the cases: {{live_tensors}}.',
].join('\n');

/** Fills `{{name}}` from `values`; an unknown name throws (a template typo must not print as text). */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`performance doc template: no value for {{${name}}}`);
    return value;
  });
}

function growth(records: GrowthRecord[], system: SystemId, pick: (g: GrowthRecord) => number): string {
  const one = records.find((g) => g.system === system && g.workers === 1);
  const most = records.filter((g) => g.system === system).sort((a, b) => b.workers - a.workers)[0];
  return one && most ? `${(pick(most) / pick(one)).toFixed(1)}x` : 'n/a';
}

/** "all 12 targets pass." or how many pass, which missed (with the ratio), how many are unevaluated. */
function summary(of: TargetOutcome[]): string {
  if (of.length === 0) return 'not run.';
  const missed = of.filter((t) => t.status === 'FAIL');
  const unevaluated = of.filter((t) => t.status === 'n/a').length;
  const passed = of.length - missed.length - unevaluated;
  if (passed === of.length) return `all ${of.length} targets pass.`;
  return (
    `${passed} of ${of.length} targets pass` +
    (missed.length > 0 ? `; missed: ${missed.map((t) => `${t.caseId} ${t.target} (${formatRatio(t.ratio)})`).join(', ')}` : '') +
    (unevaluated > 0 ? `; ${unevaluated} not evaluated (figures missing)` : '') +
    '.'
  );
}

/** The values of {@link PROSE_TEMPLATE} for one run. */
export function proseValues(report: BenchReport, targets: TargetOutcome[]): Record<string, string> {
  const live = report.liveTensors;
  // Per system a count per role, or the error text when a process could not be asked.
  const roles = (value: unknown): Record<string, unknown> => (typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : { '': value });
  const liveText = live
    ? Object.entries(live.after)
        .flatMap(([system, after]) => Object.entries(roles(after)).map(([role, n]) => `${system} ${role} ${String(roles(live.before[system])[role] ?? 'n/a')} → ${String(n)}`))
        .join(', ')
    : 'n/a';
  const find = (caseId: string, system: SystemId): CaseResult | undefined => report.results.find((r) => r.caseId === caseId && r.system === system);
  const time = (caseId: string, system: SystemId) => formatTime(find(caseId, system)?.medianMs ?? Number.NaN);
  const rate = (caseId: string, system: SystemId) => formatRate(find(caseId, system)?.perSecond ?? Number.NaN);
  const target = (caseId: string, peer: string, system: SystemId = 'tensorbus-nats') => {
    const t = targets.find((x) => x.system === system && x.caseId === caseId && x.target.endsWith(peer));
    return formatRatio(t?.ratio ?? Number.NaN);
  };
  const peak = (system: SystemId, role?: string) => {
    const peaks = report.peaks.filter((p) => p.system === system && p.role !== 'nats-server' && (role === undefined || p.role.startsWith(role)));
    return peaks.length > 0 ? formatRatio(Math.max(...peaks.map((p) => p.peakBytes)) / report.peakPayloadBytes) : 'n/a';
  };
  return {
    targets_summary: summary(targets.filter((t) => t.system === 'tensorbus-nats')),
    hosts_summary: summary(targets.filter((t) => t.system === 'tensorbus-2hosts')),
    nats_noop: time('noop', 'tensorbus-nats'),
    torch_noop: time('noop', 'pytorch'),
    noop_vs_torch: target('noop', 'PyTorch RPC'),
    tcp_noop: time('noop', 'tcp'),
    noop_vs_tcp: target('noop', 'raw TCP'),
    raw_nats_noop: time('noop', 'nats'),
    noop_vs_nats: target('noop', 'raw NATS'),
    no_poll_noop: time('noop', 'tensorbus-nats-no-poll'),
    no_poll_4mb: time('4MB', 'tensorbus-nats-no-poll'),
    no_poll_rref: rate('rref', 'tensorbus-nats-no-poll'),
    no_poll_autograd: time('autograd', 'tensorbus-nats-no-poll'),
    no_poll_noop_vs_torch: ratio(find('noop', 'tensorbus-nats-no-poll'), find('noop', 'pytorch')),
    no_poll_noop_vs_tcp: ratio(find('noop', 'tensorbus-nats-no-poll'), find('noop', 'tcp')),
    nats_4mb: time('4MB', 'tensorbus-nats'),
    torch_4mb: time('4MB', 'pytorch'),
    tput_4mb_vs_torch: target('4MB', 'PyTorch RPC'),
    tput_4mb_vs_grpc: target('4MB', 'gRPC-js'),
    nats_400mb: time('400MB', 'tensorbus-nats'),
    torch_400mb: time('400MB', 'pytorch'),
    tput_400mb_vs_torch: target('400MB', 'PyTorch RPC'),
    tput_400mb_vs_grpc: target('400MB', 'gRPC-js'),
    nats_async: rate('async', 'tensorbus-nats'),
    torch_async: rate('async', 'pytorch'),
    async_vs_torch: target('async', 'PyTorch RPC'),
    nats_rref: rate('rref', 'tensorbus-nats'),
    torch_rref: rate('rref', 'pytorch'),
    rref_vs_torch: target('rref', 'PyTorch RPC'),
    nats_autograd: time('autograd', 'tensorbus-nats'),
    torch_autograd: time('autograd', 'pytorch'),
    autograd_vs_torch: target('autograd', 'PyTorch RPC'),
    nats_peak: peak('tensorbus-nats'),
    torch_peak: peak('pytorch', 'rank 0'),
    hosts_4mb: time('4MB', 'tensorbus-2hosts'),
    torch_hosts_4mb: time('4MB', 'pytorch-2hosts'),
    hosts_4mb_vs_torch: target('4MB', 'PyTorch RPC 2 hosts', 'tensorbus-2hosts'),
    hosts_400mb: time('400MB', 'tensorbus-2hosts'),
    torch_hosts_400mb: time('400MB', 'pytorch-2hosts'),
    hosts_400mb_vs_torch: target('400MB', 'PyTorch RPC 2 hosts', 'tensorbus-2hosts'),
    hosts_peak: peak('tensorbus-2hosts'),
    torch_hosts_peak: peak('pytorch-2hosts', 'rank 0'),
    local_noop: time('noop', 'tensorbus-local'),
    local_4mb: time('4MB', 'tensorbus-local'),
    local_400mb: time('400MB', 'tensorbus-local'),
    growth_rate: growth(report.growth, 'tensorbus-nats', (g) => g.perSecond),
    growth_latency: growth(report.growth, 'tensorbus-nats', (g) => g.medianMs),
    raw_growth_rate: growth(report.growth, 'nats', (g) => g.perSecond),
    raw_growth_latency: growth(report.growth, 'nats', (g) => g.medianMs),
    live_tensors: liveText || 'n/a',
  };
}
