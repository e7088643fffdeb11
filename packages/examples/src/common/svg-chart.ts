/**
 * A small SVG line chart, enough to leave a picture of what an example
 * learned: several series over one x axis, optional second y axis.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** One line of the chart. */
export interface Series {
  label: string;
  points: Array<[number, number]>;
  /** Plot against the right-hand axis. */
  right?: boolean;
}

/** What to draw. */
export interface ChartSpec {
  title: string;
  xLabel: string;
  yLabel: string;
  yRightLabel?: string;
  series: Series[];
  /** Log scale on both axes (for latency against size). */
  log?: boolean;
  /** With `log`: ticks at powers of ten (1, 10, 100, ...) instead of five even steps. */
  decadeTicks?: boolean;
  /** Labels of the x ticks (default: a number); receives the value, not its logarithm. */
  xTickFormat?: (value: number) => string;
  /** Labels of the left y ticks (default: a number); receives the value, not its logarithm. */
  yTickFormat?: (value: number) => string;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const W = 720;
const H = 420;
const M = { left: 70, right: 70, top: 40, bottom: 50 };

function extent(values: number[], log: boolean): [number, number] {
  const finite = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (finite.length === 0) return [0, 1];
  let lo = Math.min(...finite);
  let hi = Math.max(...finite);
  if (log) return [Math.log10(lo), Math.log10(hi) + (lo === hi ? 1 : 0)];
  if (lo === hi) [lo, hi] = [lo - 1, hi + 1];
  if (lo > 0 && lo < hi / 3) lo = 0;
  return [lo, hi];
}

function ticks([lo, hi]: [number, number], n = 5): number[] {
  return Array.from({ length: n + 1 }, (_, i) => lo + ((hi - lo) * i) / n);
}

/** The whole powers of ten within [lo, hi] (in log10 units); even steps when there are fewer than two. */
function decades([lo, hi]: [number, number]): number[] {
  const out: number[] = [];
  for (let e = Math.ceil(lo - 1e-9); e <= hi + 1e-9; e++) out.push(e);
  return out.length >= 2 ? out : ticks([lo, hi]);
}

function fmt(v: number, log: boolean): string {
  const x = log ? 10 ** v : v;
  if (Math.abs(x) >= 1000 || (Math.abs(x) < 0.01 && x !== 0)) return x.toExponential(1);
  return Number(x.toPrecision(3)).toString();
}

/** Renders the chart as SVG text. */
export function renderChart(spec: ChartSpec): string {
  const log = spec.log ?? false;
  const tickAt = log && spec.decadeTicks ? decades : (range: [number, number]) => ticks(range);
  const label = (t: number, format: ((value: number) => string) | undefined) => (format ? format(log ? 10 ** t : t) : fmt(t, log));
  const tr = (v: number) => (log ? Math.log10(v) : v);
  const left = spec.series.filter((s) => !s.right);
  const right = spec.series.filter((s) => s.right);
  const xs = extent(spec.series.flatMap((s) => s.points.map((p) => p[0])), log);
  const yl = extent(left.flatMap((s) => s.points.map((p) => p[1])), log);
  const yr = extent(right.flatMap((s) => s.points.map((p) => p[1])), log);
  const px = (x: number) => M.left + ((tr(x) - xs[0]) / (xs[1] - xs[0] || 1)) * (W - M.left - M.right);
  const py = (y: number, r: [number, number]) => H - M.bottom - ((tr(y) - r[0]) / (r[1] - r[0] || 1)) * (H - M.top - M.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${escape(spec.title)}</text>`,
    `<line x1="${M.left}" y1="${H - M.bottom}" x2="${W - M.right}" y2="${H - M.bottom}" stroke="black"/>`,
    `<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${H - M.bottom}" stroke="black"/>`,
  ];
  for (const t of tickAt(xs)) {
    const x = M.left + ((t - xs[0]) / (xs[1] - xs[0] || 1)) * (W - M.left - M.right);
    out.push(`<text x="${x}" y="${H - M.bottom + 16}" text-anchor="middle">${escape(label(t, spec.xTickFormat))}</text>`);
  }
  for (const t of tickAt(yl)) {
    const y = H - M.bottom - ((t - yl[0]) / (yl[1] - yl[0] || 1)) * (H - M.top - M.bottom);
    out.push(`<line x1="${M.left}" y1="${y}" x2="${W - M.right}" y2="${y}" stroke="#eee"/>`);
    out.push(`<text x="${M.left - 6}" y="${y + 4}" text-anchor="end">${escape(label(t, spec.yTickFormat))}</text>`);
  }
  if (right.length > 0) {
    out.push(`<line x1="${W - M.right}" y1="${M.top}" x2="${W - M.right}" y2="${H - M.bottom}" stroke="black"/>`);
    for (const t of tickAt(yr)) {
      const y = H - M.bottom - ((t - yr[0]) / (yr[1] - yr[0] || 1)) * (H - M.top - M.bottom);
      out.push(`<text x="${W - M.right + 6}" y="${y + 4}">${fmt(t, log)}</text>`);
    }
    out.push(`<text transform="translate(${W - 18},${H / 2}) rotate(90)" text-anchor="middle">${escape(spec.yRightLabel ?? '')}</text>`);
  }
  out.push(`<text x="${(W + M.left - M.right) / 2}" y="${H - 12}" text-anchor="middle">${escape(spec.xLabel)}</text>`);
  out.push(`<text transform="translate(18,${H / 2}) rotate(-90)" text-anchor="middle">${escape(spec.yLabel)}</text>`);
  spec.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const range = s.right ? yr : yl;
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!log || (x > 0 && y > 0)));
    const d = pts.map(([x, y], k) => `${k === 0 ? 'M' : 'L'}${px(x).toFixed(1)},${py(y, range).toFixed(1)}`).join(' ');
    out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const [x, y] of pts.length <= 40 ? pts : []) out.push(`<circle cx="${px(x).toFixed(1)}" cy="${py(y, range).toFixed(1)}" r="2.5" fill="${color}"/>`);
    out.push(`<rect x="${M.left + 10}" y="${M.top + 6 + i * 16}" width="12" height="3" fill="${color}"/>`);
    out.push(`<text x="${M.left + 28}" y="${M.top + 11 + i * 16}">${escape(s.label)}${s.right ? ' (right axis)' : ''}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Writes the chart to `path` (creating folders) and returns the path. */
export function writeChart(path: string, spec: ChartSpec): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, renderChart(spec));
  return path;
}
