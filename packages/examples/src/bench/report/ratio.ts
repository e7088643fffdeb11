/**
 * The one ratio format of the bench's tables, in a module of its own so that
 * every table (the application one included) can use it without importing
 * the result types.
 * @module
 */

/** `0.85x` (two significant digits below 10). */
export function formatRatio(ratio: number): string {
  if (!Number.isFinite(ratio)) return 'n/a';
  return `${ratio >= 10 ? ratio.toFixed(0) : ratio.toPrecision(2)}x`;
}
