/**
 * A small SVG line chart, enough to leave a picture of what an example
 * learned: several series over one x axis, optional second y axis. The axis
 * rules live in `chart-scale.ts`, the legend's placement in
 * `chart-legend.ts`; this module draws.
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { legendCorner, type Box, type Polyline } from './chart-legend.js';
import { scaleFor, type AxisOptions, type Scale } from './chart-scale.js';

export type { AxisOptions } from './chart-scale.js';

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
  /** The x axis (integer rounds, categories, log, ...). */
  xAxis?: AxisOptions;
  /** The left y axis (starts at 0 for non-negative data unless `min` says otherwise). */
  yAxis?: AxisOptions;
  /** The right y axis, for series with `right`. */
  yRightAxis?: AxisOptions;
  /** Shorthand: log scale on both axes (for latency against size). */
  log?: boolean;
  /** With `log`: ticks at powers of ten (1, 10, 100, ...) instead of five even steps. */
  decadeTicks?: boolean;
  /** Shorthand for `xAxis.format`. */
  xTickFormat?: (value: number) => string;
  /** Shorthand for `yAxis.format`. */
  yTickFormat?: (value: number) => string;
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const W = 720;
const H = 420;
const M = { left: 70, right: 70, top: 40, bottom: 50 };
/** Legend geometry: one row per series. */
const ROW = 16;
const CHAR = 6.8;

function axis(base: AxisOptions | undefined, log: boolean, decadeTicks: boolean, format: ((v: number) => string) | undefined): AxisOptions {
  return { ...(log ? { log, decadeTicks } : {}), ...(format ? { format } : {}), ...base };
}

function legendLabel(s: Series): string {
  return `${s.label}${s.right ? ' (right axis)' : ''}`;
}

/** Renders the chart as SVG text. */
export function renderChart(spec: ChartSpec): string {
  const log = spec.log ?? false;
  const decadeTicks = spec.decadeTicks ?? false;
  const left = spec.series.filter((s) => !s.right);
  const right = spec.series.filter((s) => s.right);
  const xs = scaleFor(spec.series.flatMap((s) => s.points.map((p) => p[0])), axis(spec.xAxis, log, decadeTicks, spec.xTickFormat));
  const yl = scaleFor(left.flatMap((s) => s.points.map((p) => p[1])), axis(spec.yAxis, log, decadeTicks, spec.yTickFormat));
  const yr = scaleFor(right.flatMap((s) => s.points.map((p) => p[1])), axis(spec.yRightAxis, log, decadeTicks, undefined));
  const plot: Box = { x: M.left, y: M.top, width: W - M.left - M.right, height: H - M.top - M.bottom };
  const px = (x: number) => plot.x + xs.at(x) * plot.width;
  const py = (y: number, s: Scale) => plot.y + plot.height - s.at(y) * plot.height;

  const lines: Polyline[] = spec.series.map((s) => {
    const ys = s.right ? yr : yl;
    return s.points.filter(([x, y]) => xs.drawable(x) && ys.drawable(y)).map(([x, y]): [number, number] => [px(x), py(y, ys)]);
  });
  const labels = spec.series.map(legendLabel);
  const size = { width: 36 + Math.max(0, ...labels.map((l) => l.length)) * CHAR, height: 8 + ROW * spec.series.length };
  const corner = spec.series.length > 0 ? legendCorner(plot, size, lines) : undefined;
  // No empty corner: the legend goes under the x axis label, and the picture grows.
  const legend: Box = corner ?? { x: M.left, y: H, ...size };
  const height = corner ? H : H + size.height + 10;

  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${height}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="15">${escape(spec.title)}</text>`,
  ];
  for (const t of yl.ticks) {
    const y = py(t.value, yl);
    out.push(`<line class="grid" x1="${plot.x}" y1="${y.toFixed(1)}" x2="${plot.x + plot.width}" y2="${y.toFixed(1)}" stroke="#eee"/>`);
    out.push(`<text class="tick y-tick" x="${plot.x - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end">${escape(t.label)}</text>`);
  }
  for (const t of xs.ticks) {
    const x = px(t.value);
    out.push(`<line x1="${x.toFixed(1)}" y1="${plot.y + plot.height}" x2="${x.toFixed(1)}" y2="${plot.y + plot.height + 4}" stroke="black"/>`);
    out.push(`<text class="tick x-tick" x="${x.toFixed(1)}" y="${plot.y + plot.height + 16}" text-anchor="middle">${escape(t.label)}</text>`);
  }
  out.push(`<line x1="${plot.x}" y1="${plot.y + plot.height}" x2="${plot.x + plot.width}" y2="${plot.y + plot.height}" stroke="black"/>`);
  out.push(`<line x1="${plot.x}" y1="${plot.y}" x2="${plot.x}" y2="${plot.y + plot.height}" stroke="black"/>`);
  if (right.length > 0) {
    out.push(`<line x1="${plot.x + plot.width}" y1="${plot.y}" x2="${plot.x + plot.width}" y2="${plot.y + plot.height}" stroke="black"/>`);
    for (const t of yr.ticks) {
      const y = py(t.value, yr);
      out.push(`<text class="tick y-right-tick" x="${plot.x + plot.width + 6}" y="${(y + 4).toFixed(1)}">${escape(t.label)}</text>`);
    }
    out.push(`<text transform="translate(${W - 18},${H / 2}) rotate(90)" text-anchor="middle">${escape(spec.yRightLabel ?? '')}</text>`);
  }
  out.push(`<text x="${plot.x + plot.width / 2}" y="${H - 12}" text-anchor="middle">${escape(spec.xLabel)}</text>`);
  out.push(`<text transform="translate(18,${H / 2}) rotate(-90)" text-anchor="middle">${escape(spec.yLabel)}</text>`);
  lines.forEach((pts, i) => {
    const color = COLORS[i % COLORS.length];
    const d = pts.map(([x, y], k) => `${k === 0 ? 'M' : 'L'}${x.toFixed(1)},${y.toFixed(1)}`).join(' ');
    if (pts.length > 1) out.push(`<path class="series" d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`);
    for (const [x, y] of pts.length <= 40 ? pts : []) out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="2.5" fill="${color}"/>`);
  });
  out.push(`<g class="legend">`);
  out.push(`<rect class="legend-box" x="${legend.x.toFixed(1)}" y="${legend.y.toFixed(1)}" width="${legend.width.toFixed(1)}" height="${legend.height}" fill="white" fill-opacity="0.85" stroke="#ccc"/>`);
  labels.forEach((text, i) => {
    const y = legend.y + 4 + i * ROW;
    out.push(`<rect x="${(legend.x + 8).toFixed(1)}" y="${(y + 6).toFixed(1)}" width="14" height="3" fill="${COLORS[i % COLORS.length]}"/>`);
    out.push(`<text x="${(legend.x + 28).toFixed(1)}" y="${(y + 12).toFixed(1)}">${escape(text)}</text>`);
  });
  out.push('</g>', '</svg>');
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
