/**
 * The benchmark's chart: identity round-trip time against payload size for
 * every system, log-log, as SVG.
 * @module
 */
import { writeChart } from '../../common/svg-chart.js';
import { CASES } from '../cases.js';
import type { CaseResult } from '../results.js';
import { BROWSER_SYSTEMS, SYSTEM_LABELS, type SystemId } from '../systems/system-ids.js';

/** `10 kB`, `1 MB`, `100 MB`: labels of the decade ticks. */
function decimalBytes(bytes: number): string {
  const units: Array<[number, string]> = [[1e9, 'GB'], [1e6, 'MB'], [1e3, 'kB']];
  for (const [scale, unit] of units) if (bytes >= scale * 0.999) return `${Number((bytes / scale).toPrecision(3))} ${unit}`;
  return `${Math.round(bytes)} B`;
}

/** `100 µs`, `1 ms`, `10 s`: labels of the decade ticks. */
function decimalTime(ms: number): string {
  const trim = (v: number) => Number(v.toPrecision(3));
  if (ms >= 1000) return `${trim(ms / 1000)} s`;
  if (ms >= 1) return `${trim(ms)} ms`;
  return `${trim(ms * 1000)} µs`;
}

/** Writes the chart to `path`; returns the path. */
export function writeRoundTripChart(path: string, results: CaseResult[], systems: SystemId[]): string {
  const sized = CASES.filter((c) => (c.bytes ?? 0) > 0);
  // The browser systems run the no-op and 4 MB only: a table of their own, no line here.
  const series = systems
    .filter((system) => !BROWSER_SYSTEMS.includes(system))
    .map((system) => ({
      label: SYSTEM_LABELS[system],
      points: sized
        .map((c) => [c.bytes!, results.find((r) => r.caseId === c.id && r.system === system)?.medianMs] as const)
        .filter((p): p is readonly [number, number] => p[1] !== undefined && Number.isFinite(p[1]))
        .map(([x, y]): [number, number] => [x, y]),
    }))
    .filter((s) => s.points.length > 0);
  return writeChart(path, {
    title: 'Identity round trip of a float32 tensor, median (log-log)',
    xLabel: 'payload each way (sizes 4 KiB to 400 MiB)',
    yLabel: 'round-trip time',
    series,
    log: true,
    decadeTicks: true,
    xTickFormat: decimalBytes,
    yTickFormat: decimalTime,
  });
}
