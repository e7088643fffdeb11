/**
 * @tensorbus/dashboard: a live web page of a namespace's workers (the same
 * figures as `tensorbus status`, with charts and events as they happen;
 * docs/observability.md). `tensorbus dashboard` and `tensorbus launch
 * --dashboard` serve it from the command line (the `./cli` entry, loaded by
 * the `tensorbus` command of `@tensorbus/actors`).
 * @module
 */
export { startDashboard } from './dashboard.js';
export type { DashboardOptions } from './dashboard.js';
export type { DashboardServer as Dashboard } from './server.js';
export type { DashboardState } from './collector.js';
export { DASHBOARD_PORT } from './server.js';
