/**
 * A headless Chromium for tests: playwright-core on the system's Chromium
 * (see @tensorbus/nats-transport/testing/browser). Fails with how to install
 * it when Debian's `chromium` is missing: browser tests are never skipped;
 * and a wait for what a page shows.
 */
import type { BrowserPage } from '@tensorbus/nats-transport/testing/browser';

export { findChromium, launchChromium, openPage, servePage, type BrowserPage, type ServedPage } from '@tensorbus/nats-transport/testing/browser';

/** Reads `expression` in `page` until `done` holds; throws naming `what` (and the last value) after `timeoutMs`. */
export async function untilShown<T>(page: BrowserPage, expression: string, done: (value: T) => boolean, what: string, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await page.evaluate<T>(expression);
  while (!done(value)) {
    if (Date.now() > deadline) throw new Error(`the page did not show ${what}: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    value = await page.evaluate<T>(expression);
  }
  return value;
}
