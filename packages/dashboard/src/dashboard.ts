/**
 * A dashboard of one namespace: a plain client of the namespace (it does not
 * join the group, so a static group's ranks and barriers stay as they are),
 * a collector polling the workers' stats while a page listens, and the web
 * server. Used by `tensorbus dashboard` and `tensorbus launch --dashboard`.
 * @module
 */
import type { Transport } from '@tensorbus/core';
import { Collector } from './collector.js';
import { startDashboardServer, type DashboardServer, type DashboardServerOptions } from './server.js';

/** Options of {@link startDashboard}. */
export interface DashboardOptions extends DashboardServerOptions {
  /** A transport connected to the namespace (the dashboard closes it when it stops). */
  transport: Transport;
  /** How the page names the namespace and the server. */
  namespace: string;
  server: string;
}

/** Starts a dashboard; `close()` stops its server and its transport. */
export async function startDashboard(options: DashboardOptions): Promise<DashboardServer> {
  const collector = new Collector(options.transport, { namespace: options.namespace, server: options.server });
  const server = await startDashboardServer(collector, options);
  return {
    get url() {
      return server.url;
    },
    get last() {
      return server.last;
    },
    get listening() {
      return server.listening;
    },
    async close() {
      await server.close();
      collector.close();
      await options.transport.close().catch(() => undefined);
    },
  };
}
