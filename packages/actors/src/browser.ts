/**
 * @tensorbus/actors in a page: every name of the Node entry (the gateway and
 * the dashboard, which a page cannot run, are packages of their own). A
 * bundler building for the browser takes this module through the package's
 * "browser" export condition, and the Node-only platform modules
 * (platform/*.ts) are swapped for their browser twins by the package's
 * "browser" field. See docs/browser.md.
 * @module
 */
export * from './index.js';
