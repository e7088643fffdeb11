/**
 * The `tensorbus` commands that live in packages of their own, loaded when
 * they run: `tensorbus gateway` from `@tensorbus/gateway/cli`, `tensorbus
 * dashboard` and `launch --dashboard` from `@tensorbus/dashboard/cli`.
 *
 * Why this way (docs/api.md, "Packages"): a worker installs
 * `@tensorbus/actors`, and must not install an HTTP server, an XML parser and
 * a JWT library it never runs. The gateway and the dashboard are built on
 * actors, so actors cannot import them (a cycle); the one `tensorbus` command
 * keeps its place in actors (where `launch` and `status` are) and asks for the
 * others at run time, as it asks for `@tensorbus/nats-transport`. Arguments
 * are parsed here, in one place for every command (args.ts); the command
 * package receives them parsed. Missing, the command exits 2 with a
 * {@link MissingPackageError} that says what to install.
 *
 * The faces are declared here and implemented by the packages, which import
 * these types from `@tensorbus/actors/internal`: a change on either side
 * breaks their build, not a run.
 * @module
 */
import { MissingPackageError } from '@tensorbus/core';
import { resolveOptional } from '../optional-package.js';
import type { DashboardArgs, GatewayArgs } from './args.js';

/** What `@tensorbus/gateway/cli` exports. */
export interface GatewayCommandModule {
  /** Runs `tensorbus gateway` until SIGINT/SIGTERM; resolves with the exit code. */
  gatewayCommand(args: GatewayArgs): Promise<number>;
}

/** Which namespace a dashboard shows, and where it listens. */
export interface DashboardTarget {
  server: string | undefined;
  namespace: string | undefined;
  port: number;
  host: string;
  /** `'always'`: query the workers even when no page is open (the launcher's dashboard). */
  poll?: 'watched' | 'always';
}

/** A dashboard started by {@link DashboardCommandModule.startDashboardFor}. */
export interface RunningDashboard {
  /** The page's address (127.0.0.1 for a dashboard listening on every interface). */
  url: string;
  close(): Promise<void>;
}

/** What `@tensorbus/dashboard/cli` exports. */
export interface DashboardCommandModule {
  /** Runs `tensorbus dashboard` until SIGINT/SIGTERM; resolves with the exit code. */
  dashboardCommand(args: DashboardArgs): Promise<number>;
  /** Starts the dashboard of a namespace (`tensorbus launch --dashboard`). */
  startDashboardFor(target: DashboardTarget): Promise<RunningDashboard>;
}

/** Imports `specifier` of `packageName` for `needer`; checks it exports `names` as functions. */
async function loadCommandPackage<T>(packageName: string, specifier: string, needer: string, names: string[]): Promise<T> {
  const missing = (detail: string) =>
    new MissingPackageError(`${needer} needs ${packageName}, which ${detail}: npm i ${packageName} (beside @tensorbus/actors)`, { packageName });
  const url = resolveOptional(specifier);
  if (url === undefined) throw missing('is not installed');
  const module = (await import(url)) as Record<string, unknown>;
  const absent = names.filter((name) => typeof module[name] !== 'function');
  if (absent.length > 0) throw missing(`does not export ${absent.join(', ')} (a version that does not match @tensorbus/actors)`);
  return module as T;
}

/**
 * Loads `@tensorbus/gateway/cli`.
 * @throws MissingPackageError when `@tensorbus/gateway` is not installed (or does not match).
 */
export function loadGatewayCommand(): Promise<GatewayCommandModule> {
  return loadCommandPackage('@tensorbus/gateway', '@tensorbus/gateway/cli', '`tensorbus gateway`', ['gatewayCommand']);
}

/**
 * Loads `@tensorbus/dashboard/cli`; `needer` names the command for the error.
 * @throws MissingPackageError when `@tensorbus/dashboard` is not installed (or does not match).
 */
export function loadDashboardCommand(needer: string): Promise<DashboardCommandModule> {
  return loadCommandPackage('@tensorbus/dashboard', '@tensorbus/dashboard/cli', needer, ['dashboardCommand', 'startDashboardFor']);
}
