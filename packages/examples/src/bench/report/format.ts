/**
 * How the benchmark prints figures: times in µs/ms/s, rates in calls/s,
 * sizes in MB, ratios as `1.23x`.
 * @module
 */
import type { CaseResult } from '../results.js';

/** `287 µs`, `1.59 ms`, `483 ms`, `2.41 s`. */
export function formatTime(ms: number): string {
  if (!Number.isFinite(ms)) return 'n/a';
  if (ms < 1) return `${(ms * 1000).toPrecision(3)} µs`;
  if (ms < 1000) return `${ms.toPrecision(3)} ms`;
  return `${(ms / 1000).toPrecision(3)} s`;
}

/** `8.8 k/s`, `950 /s`. */
export function formatRate(perSecond: number): string {
  if (!Number.isFinite(perSecond)) return 'n/a';
  return perSecond >= 1000 ? `${(perSecond / 1000).toPrecision(3)} k/s` : `${perSecond.toPrecision(3)} /s`;
}

/** `1,234 MB` (MiB). */
export function formatMB(bytes: number): string {
  return `${Math.round(bytes / (1 << 20)).toLocaleString('en-US')} MB`;
}

export { formatRatio } from './ratio.js';

/** The headline figure of a result: a time, a rate, or why there is none. */
export function formatFigure(result: CaseResult | undefined): string {
  if (!result) return '—';
  if (result.skipped) return result.skipped;
  if (result.perSecond !== undefined) return formatRate(result.perSecond);
  if (result.medianMs !== undefined) return `${formatTime(result.medianMs)}${result.timeouts ? ` (${result.timeouts}/${result.n} lost)` : ''}`;
  return '—';
}

/** The headline figure with its spread, for progress lines. */
export function formatDetail(result: CaseResult): string {
  if (result.skipped) return `skipped: ${result.skipped}`;
  if (result.perSecond !== undefined) {
    return `${formatRate(result.perSecond)}${result.rounds ? ` (rounds ${result.rounds.map((r) => formatRate(r)).join(', ')})` : ''}`;
  }
  const spread = result.p10Ms !== undefined && result.p90Ms !== undefined ? `, p10 ${formatTime(result.p10Ms)}, p90 ${formatTime(result.p90Ms)}` : '';
  const lost = result.timeouts ? `, ${result.timeouts} lost (counted as infinitely slow)` : '';
  return `median ${formatTime(result.medianMs ?? Number.NaN)}${spread}${result.n ? `, n=${result.n}` : ''}${lost}`;
}
