/**
 * Axis ranges and ticks for the examples' charts: where an axis starts and
 * ends and which values get a labelled gridline. Kept apart from the SVG so
 * the rules a reader relies on (counts start at zero, integers where only
 * integers exist, an accuracy axis that does not end at the data) are one
 * small function each.
 * @module
 */

/** How one axis is drawn. */
export interface AxisOptions {
  /**
   * Where the axis starts. Default for a linear axis: 0 when every value is
   * ≥ 0 (counts, rates, losses, accuracies: a reader assumes the axis starts
   * at zero); give a number to start elsewhere, and say so in the label.
   */
  min?: number;
  /** Where the axis ends (default: the first tick at or above the largest value). */
  max?: number;
  /** Only integers exist on this axis (rounds, participants): ticks at integers only. */
  integer?: boolean;
  /** Values are fractions shown as percentages: the axis runs 0–100 % and is labelled in %. */
  percent?: boolean;
  /** Log10 scale (for latency against size). */
  log?: boolean;
  /** With `log`: ticks at powers of ten instead of even steps. */
  decadeTicks?: boolean;
  /** The distinct values are categories (1, 2, 4, 8 micro-batches): evenly spaced, a tick at each, nothing between. */
  categories?: boolean;
  /** Tick labels (default: a short number, or `n %` with `percent`); receives the value, not its logarithm. */
  format?: (value: number) => string;
}

/** A resolved axis: maps values to [0, 1] and lists its ticks. */
export interface Scale {
  /** Position of `value` along the axis, 0 at its start and 1 at its end. */
  at(value: number): number;
  /** Tick values (data units) and their labels. */
  ticks: Array<{ value: number; label: string }>;
  /** True when `value` can be drawn (finite; positive on a log axis). */
  drawable(value: number): boolean;
}

/** The "nice" step (1, 2 or 5 times a power of ten) giving about `count` intervals over `span`. */
export function niceStep(span: number, count: number, integer = false): number {
  const raw = span > 0 ? span / count : 1;
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  const step = (fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10) * power;
  return integer ? Math.max(1, Math.round(step)) : step;
}

/** A number as a tick label: three significant digits, exponent notation only for very large or small values. */
export function shortNumber(x: number): string {
  if (Math.abs(x) >= 1e6 || (Math.abs(x) < 0.01 && x !== 0)) return x.toExponential(1);
  return Number(x.toPrecision(3)).toLocaleString('en-US');
}

function linear(values: number[], options: AxisOptions): Scale {
  const finite = values.filter(Number.isFinite);
  const format = options.format ?? (options.percent ? (v: number) => `${Math.round(v * 100)} %` : shortNumber);
  let lo = options.min ?? (options.percent ? 0 : Math.min(0, ...finite));
  let hi = options.max ?? (options.percent ? 1 : Math.max(lo + (options.integer ? 1 : 1e-9), ...finite));
  if (finite.length === 0 && options.max === undefined && !options.percent) hi = lo + 1;
  // Percent axes step by 20 %, so 100 % is always a labelled gridline.
  const step = options.percent ? 0.2 : niceStep(hi - lo, 5, options.integer);
  if (options.min === undefined) lo = Math.floor(lo / step + 1e-9) * step;
  if (options.max === undefined) hi = Math.ceil(hi / step - 1e-9) * step;
  if (hi <= lo) hi = lo + step;
  const ticks: Scale['ticks'] = [];
  for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) {
    // k * step, not a running sum: 0.1 + 0.2 must label as 0.3.
    const value = Number((k * step).toPrecision(12));
    ticks.push({ value, label: format(value) });
  }
  return { at: (v) => (v - lo) / (hi - lo), ticks, drawable: Number.isFinite };
}

function logarithmic(values: number[], options: AxisOptions): Scale {
  const positive = values.filter((v) => Number.isFinite(v) && v > 0).map(Math.log10);
  let lo = positive.length > 0 ? Math.min(...positive) : 0;
  let hi = positive.length > 0 ? Math.max(...positive) : 1;
  if (hi === lo) hi = lo + 1;
  const format = options.format ?? shortNumber;
  let exponents: number[] = [];
  if (options.decadeTicks) for (let e = Math.ceil(lo - 1e-9); e <= hi + 1e-9; e++) exponents.push(e);
  if (exponents.length < 2) exponents = Array.from({ length: 6 }, (_, i) => lo + ((hi - lo) * i) / 5);
  [lo, hi] = [Math.min(lo, ...exponents), Math.max(hi, ...exponents)];
  return {
    at: (v) => (Math.log10(v) - lo) / (hi - lo),
    ticks: exponents.map((e) => ({ value: 10 ** e, label: format(10 ** e) })),
    drawable: (v) => Number.isFinite(v) && v > 0,
  };
}

function categorical(values: number[], options: AxisOptions): Scale {
  const distinct = [...new Set(values.filter(Number.isFinite))].sort((a, b) => a - b);
  const format = options.format ?? shortNumber;
  // Half a slot of margin at each end, so the first and last category are not on the frame.
  const slot = (v: number) => (distinct.indexOf(v) + 0.5) / Math.max(1, distinct.length);
  return {
    at: slot,
    ticks: distinct.map((value) => ({ value, label: format(value) })),
    drawable: (v) => distinct.includes(v),
  };
}

/** Resolves an axis over the values plotted against it. */
export function scaleFor(values: number[], options: AxisOptions = {}): Scale {
  if (options.categories) return categorical(values, options);
  if (options.log) return logarithmic(values, options);
  return linear(values, options);
}
