/**
 * A text progress bar that works through the launcher's line prefixes: one
 * line per update, never carriage returns.
 * @module
 */

/** `[#########...........]  45%` for `done` of `total`. */
export function progressBar(done: number, total: number, width = 24): string {
  const fraction = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(fraction * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(Math.round(fraction * 100)).padStart(3)}%`;
}
