/**
 * The application table: each example's rate on this build, on the baseline
 * build and (RL) PyTorch's RPC RL example, the ratios, and the application
 * targets (issue 38): RL steps/s ≥1.0x the baseline and ≥5x PyTorch's RL
 * example (over the same length of training: PyTorch's runs for a fixed
 * time, so this build's example runs that long too); parameter server and
 * pipeline ≥1.0x the baseline. A missing
 * figure leaves its target 'n/a'. This build with busy polling off (on by
 * default) is a column and a ratio, not a target: what polling costs or
 * buys an application, in the same run.
 * @module
 */
import { formatRatio } from '../report/ratio.js';
import { APP_CASES, type AppCase } from './app-cases.js';
import type { AppResult } from './run-apps.js';

/** What the application part of a run recorded. */
export interface AppReport {
  /** The baseline's revision as given and its commit, when `--baseline` was given. */
  baseline?: { rev: string; commit: string };
  /** The cases whose program the baseline ran in this build's copy (absent in runs from before there was a choice: none). */
  sameProgram?: Array<AppCase['id']>;
  /** How much training each case timed (absent in runs from before the report said so). */
  stretches?: Partial<Record<AppCase['id'], string>>;
  results: AppResult[];
}

/** How the doc says which program the baseline ran. */
function programsSentence(sameProgram: Array<AppCase['id']>): string {
  const titles = APP_CASES.filter((c) => sameProgram.includes(c.id)).map((c) => (c.id === 'rl' ? 'RL' : c.id.replace('-', ' ')));
  if (titles.length === 0) return 'the baseline running its own copy of each example, ';
  return `the baseline running this build's copy of the ${titles.join(' and ')} example${titles.length > 1 ? 's' : ''} on its own libraries (so that a change to an example does not count as one of the libraries) and its own copy of the others, `;
}

/** One application target and its outcome. */
export interface AppTarget {
  caseId: AppCase['id'];
  peer: 'baseline' | 'pytorch';
  limit: number;
  ratio: number;
  status: 'PASS' | 'FAIL' | 'n/a';
}

const LIMITS: Array<Pick<AppTarget, 'caseId' | 'peer' | 'limit'>> = [
  { caseId: 'rl', peer: 'baseline', limit: 1.0 },
  { caseId: 'rl', peer: 'pytorch', limit: 5 },
  { caseId: 'parameter-server', peer: 'baseline', limit: 1.0 },
  { caseId: 'pipeline', peer: 'baseline', limit: 1.0 },
];

function rateOf(results: AppResult[], caseId: string, system: AppResult['system']): number {
  return results.find((r) => r.caseId === caseId && r.system === system)?.perSecond ?? Number.NaN;
}

/** The application targets, evaluated on one run's figures. */
export function appTargets(results: AppResult[]): AppTarget[] {
  return LIMITS.map((t) => {
    // PyTorch's example runs for a fixed time: it is compared with this build's run of the same length.
    const mine = rateOf(results, t.caseId, t.peer === 'pytorch' ? 'timed' : 'tensorbus');
    const ratio = mine / rateOf(results, t.caseId, t.peer);
    return { ...t, ratio, status: !Number.isFinite(ratio) ? 'n/a' : ratio >= t.limit ? 'PASS' : 'FAIL' };
  });
}

/** `12.3`, `1,234`: a rate with a precision fit for its size. */
function rate(value: number): string {
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(1);
}

function cell(results: AppResult[], caseId: string, system: AppResult['system']): string {
  const r = results.find((x) => x.caseId === caseId && x.system === system);
  if (!r) return '—';
  if (r.skipped || r.perSecond === undefined) return `n/a (${r.skipped ?? 'no figure'})`;
  const spread = r.runs && r.runs.length > 1 ? ` (${r.runs.map(rate).join(', ')})` : '';
  return `${rate(r.perSecond)}/s${spread}`;
}

/**
 * The ratio `mine` ÷ `peer` of each round (each round runs both once), when
 * both ran every round: how far one round's comparison moves on this machine.
 */
export function roundRatios(results: AppResult[], caseId: string, mine: AppResult['system'], peer: AppResult['system']): number[] {
  const a = results.find((r) => r.caseId === caseId && r.system === mine)?.runs;
  const b = results.find((r) => r.caseId === caseId && r.system === peer)?.runs;
  if (!a || !b || a.length !== b.length || a.length < 2) return [];
  return a.map((rate, i) => rate / b[i]!);
}

/** `0.99x (rounds 0.86–1.12)`: a median ratio and the range of the rounds' own ratios. */
function ratioCell(ratio: number, rounds: number[]): string {
  if (!Number.isFinite(ratio)) return '—';
  if (rounds.length === 0) return formatRatio(ratio);
  return `${formatRatio(ratio)}<br>rounds ${Math.min(...rounds).toFixed(2)}–${Math.max(...rounds).toFixed(2)}`;
}

/** PyTorch's RL rate, with this build's over the same length of training when that ran. */
function pytorchCell(results: AppResult[]): string {
  const timed = cell(results, 'rl', 'timed');
  return timed === '—' ? cell(results, 'rl', 'pytorch') : `${cell(results, 'rl', 'pytorch')}<br>tensorbus, same length: ${timed}`;
}

/** The application section of the markdown report (empty when the cases did not run). */
export function appSection(apps: AppReport | undefined): string[] {
  if (!apps || apps.results.length === 0) return [];
  const given = apps.baseline;
  const baseline = given ? `baseline \`${given.rev}\`${given.commit.startsWith(given.rev) ? '' : ` (${given.commit.slice(0, 7)})`}` : 'baseline (none given)';
  const targets = appTargets(apps.results);
  const rows = APP_CASES.map((c) => {
    const mine = rateOf(apps.results, c.id, 'tensorbus');
    const vsBaseline = mine / rateOf(apps.results, c.id, 'baseline');
    const vsTorch = rateOf(apps.results, c.id, 'timed') / rateOf(apps.results, c.id, 'pytorch');
    const vsNoPoll = mine / rateOf(apps.results, c.id, 'no-poll');
    const outcome = targets
      .filter((t) => t.caseId === c.id)
      .map((t) => `≥${t.limit.toFixed(1)}x ${t.peer === 'baseline' ? 'baseline' : 'PyTorch'}: **${t.status}**${Number.isFinite(t.ratio) ? ` (${formatRatio(t.ratio)})` : ''}`)
      .join('<br>');
    return [
      `${c.title} (${c.unit}/s${apps.stretches?.[c.id] ? `, ${apps.stretches[c.id]}` : ''})`,
      cell(apps.results, c.id, 'tensorbus'),
      cell(apps.results, c.id, 'no-poll'),
      cell(apps.results, c.id, 'baseline'),
      c.id === 'rl' ? pytorchCell(apps.results) : '—',
      ratioCell(vsNoPoll, roundRatios(apps.results, c.id, 'tensorbus', 'no-poll')),
      ratioCell(vsBaseline, roundRatios(apps.results, c.id, 'tensorbus', 'baseline')),
      ratioCell(vsTorch, roundRatios(apps.results, c.id, 'timed', 'pytorch')),
      outcome,
    ];
  });
  return [
    '## Applications (the examples run as a user runs them)',
    '',
    `Each example through \`tensorbus launch\` (one process per worker, its own nats-server), on this build and on the ${baseline} in turn (the rounds in a balanced order: each build runs in each place, and right after each other build, about equally often), ` +
      programsSentence(apps.sameProgram ?? []) +
      'the median of the runs (each run in brackets); "polling off": this build with `TENSORBUS_BUSY_POLL_US=0` (busy polling is on by default), in the same rounds; ' +
      'PyTorch: its RPC RL example (`bench-anchors/pytorch-rl/main.py`, world size 5), which trains for a fixed time; ' +
      "÷ PyTorch compares its median with that of this build's RL example run for the same time (`--max-seconds`), the two in turn (which goes first alternating), as often as PyTorch's, " +
      'since the steps/s of a run climb as its episodes lengthen. ' +
      'Every rate is from the start of training, without warm-up, on both sides, over the same stretch of training (in its row). ' +
      "Under each ratio of medians, the range of the rounds' own ratios (each round runs every build once): how far one comparison moves from round to round on this machine.",
    '',
    '| application | tensorbus | tensorbus, polling off | baseline | PyTorch RPC | ÷ polling off | ÷ baseline | ÷ PyTorch | targets |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
  ];
}
