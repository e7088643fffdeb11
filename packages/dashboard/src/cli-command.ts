/**
 * `tensorbus dashboard` and `tensorbus launch --dashboard` (the
 * `@tensorbus/dashboard/cli` entry): serves the live dashboard of a namespace
 * until interrupted (docs/observability.md). The `tensorbus` command of
 * `@tensorbus/actors` parses the arguments and loads this module when it runs.
 * @module
 */
import { connectReader, untilSignal, type DashboardArgs, type DashboardCommandModule, type DashboardTarget, type RunningDashboard } from '@tensorbus/actors/internal';
import { startDashboard } from './dashboard.js';
import { LOOPBACK } from './server.js';

/** Address shown for a server listening on every interface. */
const ANY = new Set(['0.0.0.0', '::', '[::]']);

/** Starts the dashboard of the namespace `args` name; prints its address. */
export const startDashboardFor: DashboardCommandModule['startDashboardFor'] = async (args: DashboardTarget): Promise<RunningDashboard> => {
  const transport = await connectReader(args.server, args.namespace, 'tensorbus-dashboard');
  try {
    const dashboard = await startDashboard({ transport, namespace: args.namespace ?? '(default)', server: args.server!, port: args.port, host: args.host, poll: args.poll });
    if (!LOOPBACK.has(args.host)) {
      process.stderr.write(`[tensorbus] the dashboard listens on ${args.host}: anyone who can reach this port sees the namespace's workers (no authentication)\n`);
    }
    return { url: ANY.has(args.host) ? dashboard.url.replace(/\/\/[^/]+:/, '//127.0.0.1:') : dashboard.url, close: () => dashboard.close() };
  } catch (error) {
    await transport.close().catch(() => undefined);
    throw error;
  }
};

/** Runs `tensorbus dashboard` until SIGINT/SIGTERM; returns the exit code. */
export const dashboardCommand: DashboardCommandModule['dashboardCommand'] = async (args: DashboardArgs): Promise<number> => {
  const running = await startDashboardFor(args);
  process.stdout.write(`tensorbus dashboard of namespace ${args.namespace ?? '(default)'} on ${args.server}: ${running.url}\n`);
  const signal = await untilSignal();
  await running.close();
  return signal === 'SIGINT' ? 130 : 143;
};
