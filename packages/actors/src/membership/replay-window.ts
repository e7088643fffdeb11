/**
 * Which sequence numbers below the newest were heard, so messages of one
 * sender that come out of order are each taken once, and a replay never. A
 * worker publishes its announcements on two connections (the main thread's
 * and its beacon's), so the bus may deliver a later number first. The
 * window is a 32-bit mask: bit i set means `newest - 1 - i` was heard.
 * @module
 */

/** How many numbers below the newest are remembered. */
export const WINDOW = 32;

/** The mask once `q` (greater than `newest`) becomes the newest. */
export function advance(newest: number, mask: number, q: number): number {
  const d = q - newest;
  if (d <= 0) return mask;
  if (d > WINDOW) return 0;
  // The old newest moves to bit d-1, everything older d further.
  const moved = d === WINDOW ? 0 : mask << d;
  return (moved | (1 << (d - 1))) >>> 0;
}

/**
 * The mask with `q` (not above `newest`) marked heard, or undefined when it
 * was heard already or is too old to tell: a replay, or as good as one.
 */
export function takeLate(newest: number, mask: number, q: number): number | undefined {
  const i = newest - q - 1;
  if (i < 0 || i >= WINDOW) return undefined;
  const bit = (1 << i) >>> 0;
  if ((mask & bit) !== 0) return undefined;
  return (mask | bit) >>> 0;
}
