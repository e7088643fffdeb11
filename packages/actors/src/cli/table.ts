/**
 * Plain-text tables and units for the terminal.
 * @module
 */

/** Columns padded to their widest cell, two spaces apart; a cell beyond the header's columns is kept. */
export function formatTable(header: string[], rows: string[][]): string {
  const width = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(width[i] ?? c.length))).join('  ').trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** `1.5 MB`, `320 kB`, `12 B`. */
export function formatBytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(0)} kB`;
  return `${n} B`;
}

/** `2h05m`, `3m20s`, `42s`. */
export function formatUptime(seconds: number): string {
  const s = Math.floor(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${s}s`;
}
