/**
 * A headless Chromium for tests: playwright-core on the system's Chromium
 * (see @tensorbus/nats-transport/testing/browser). Fails with how to install
 * it when Debian's `chromium` is missing: browser tests are never skipped.
 */
export { findChromium, launchChromium, openPage, servePage, type BrowserPage, type ServedPage } from '@tensorbus/nats-transport/testing/browser';
