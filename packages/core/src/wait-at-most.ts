/**
 * Waiting with a bound.
 * @module
 */

/**
 * Resolves when `promise` settles or after `ms`, whichever comes first; the
 * timer is cleared either way, so it never holds the process open.
 */
export async function waitAtMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([promise.then(() => undefined, () => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
