/**
 * Parsing of the `tensorbus` command's arguments.
 * @module
 */
import type { RestartPolicy } from './restart-budget.js';

/** The port `tensorbus dashboard` serves on by default (Ray's dashboard port). */
export const DASHBOARD_PORT = 8265;

/** Options of `tensorbus launch`. */
export interface LaunchArgs {
  command: 'launch';
  count: number;
  names: string[];
  namespace: string | undefined;
  /** The NATS server of a running bus (`--server`, default NATS_URL); none: start an embedded nats-server. */
  server: string | undefined;
  script: string;
  scriptArgs: string[];
  /** How long workers may take to stop after an interrupt or a failure before they are killed, ms. */
  graceMs: number | undefined;
  /** Serve the dashboard of the workers on this port (see `tensorbus dashboard`). */
  dashboardPort: number | undefined;
  /** Keep the dashboard up this long after the workers finished, ms. */
  lingerMs: number;
  /** The embedded nats-server also serves WebSocket (browser workers) on this port (0: any free one). */
  websocketPort?: number;
  /** Restarts of failed workers (`--max-restarts`, `--restart-window`, `--restart-strategy`); none by default. */
  restarts: RestartPolicy;
}

/** Options of `tensorbus status`. */
export interface StatusArgs {
  command: 'status';
  server: string | undefined;
  namespace: string | undefined;
  waitMs: number;
}

/** Options of `tensorbus gateway`. */
export interface GatewayArgs {
  command: 'gateway';
  namespace: string | undefined;
  port: number;
  host: string | undefined;
  /** `--server`, or its older name `--nats`; default NATS_URL. */
  server: string | undefined;
  name: string | undefined;
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  /** A JSON file: `{ basic?, jwt?, identities? }` (see docs/gateway.md). */
  auth: string | undefined;
}

/** Options of `tensorbus dashboard`. */
export interface DashboardArgs {
  command: 'dashboard';
  server: string | undefined;
  namespace: string | undefined;
  port: number;
  host: string;
}

/** Every command: its arguments. */
export type CliArgs = LaunchArgs | StatusArgs | GatewayArgs | DashboardArgs | { command: 'help' };

export const USAGE = `usage:
  tensorbus launch -n N [--names a,b,...] [--namespace NS] [--server URL] [--grace S] [--dashboard PORT [--linger S]] [--websocket PORT]
                   [--max-restarts N [--restart-window S] [--restart-strategy one|all]] script.js [args...]
      Starts N processes of script.js with TENSORBUS_NAME, TENSORBUS_RANK,
      TENSORBUS_WORLD_SIZE and NATS_URL set. Starts an embedded nats-server
      when neither --server nor NATS_URL names one. Exits non-zero,
      stopping the rest, when one fails.
      Ctrl-C asks every worker to stop (SIGINT); a second Ctrl-C, or --grace
      seconds (default 30), kills them. Exit code: the failing worker's, or 130.
      --dashboard PORT also serves the workers' dashboard on 127.0.0.1:PORT
      (0: any free port) and prints its address; --linger S keeps it up S
      seconds after the workers finished (default 0). Needs @tensorbus/dashboard.
      --websocket PORT has the embedded nats-server serve WebSocket for
      browser workers on ws://127.0.0.1:PORT (0: any free port; loopback
      only, as it has no TLS), given to the workers as TENSORBUS_WS_URL.
      --max-restarts N restarts a worker that exits non-zero, is killed, or
      is declared failed by the others (then killed first), under its name
      and rank with TENSORBUS_RESTART_COUNT set; past N restarts within
      --restart-window S (default: the whole run) it stops the group and
      exits with that worker's code. --restart-strategy all restarts every
      worker with the failed one (default: one). See docs/supervision.md.
  tensorbus status [--server URL] [--namespace NS] [--wait MS]
      Lists the workers of a namespace (server: NATS_URL by default) with
      their host, uptime, backend, transport, calls/s and latency, errors,
      RRefs, autograd contexts, tensors and memory; then the functions each
      serves and calls, errors by code, reported values and recent events.
  tensorbus gateway [--server URL] [--namespace NS] [--port 8080] [--host H] [--name N]
                    [--tls-cert FILE --tls-key FILE] [--auth FILE]
      Serves the namespace's workers over XML-RPC (POST /RPC2) until Ctrl-C
      (--nats URL is the older name of --server).
      --auth names a JSON file of basic users, JWT verification and NATS
      identities; without it the gateway listens on loopback only.
      Needs @tensorbus/gateway. See docs/gateway.md.
  tensorbus dashboard [--server URL] [--namespace NS] [--port 8265] [--host 127.0.0.1]
      Serves a live web page of the namespace's workers (the same as status,
      plus charts of calls/s and reported values, and events as they happen)
      until Ctrl-C. Loopback only unless --host says otherwise.
      Needs @tensorbus/dashboard.
  Every command that talks to a bus names it with --server URL (or -s;
  default: NATS_URL).`;

/** Parses `argv` (without node and the script); throws Error with a usage hint on bad input. */
export function parseArgs(argv: string[]): CliArgs {
  const [command, ...rest] = argv;
  if (command === 'launch') return parseLaunch(rest);
  if (command === 'status') return parseStatus(rest);
  if (command === 'gateway') return parseGateway(rest);
  if (command === 'dashboard') return parseDashboard(rest);
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') return { command: 'help' };
  throw new Error(`unknown command '${command}'\n${USAGE}`);
}

function take(rest: string[], i: number, flag: string): string {
  const value = rest[i + 1];
  if (value === undefined) throw new Error(`${flag} needs a value\n${USAGE}`);
  return value;
}

function parseLaunch(rest: string[]): LaunchArgs {
  let count: number | undefined;
  let names: string[] | undefined;
  let namespace: string | undefined;
  let graceMs: number | undefined;
  let dashboardPort: number | undefined;
  let lingerMs = 0;
  let websocketPort: number | undefined;
  let server = process.env.NATS_URL || undefined;
  const restarts: RestartPolicy = { maxRestarts: 0, windowMs: Infinity, strategy: 'one' };
  let i = 0;
  for (; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '-n' || arg === '--nproc') count = Number(take(rest, i++, arg));
    else if (arg === '--names') names = take(rest, i++, arg).split(',').filter(Boolean);
    else if (arg === '--namespace') namespace = take(rest, i++, arg);
    else if (arg === '--server' || arg === '-s') server = take(rest, i++, arg);
    else if (arg === '--grace') graceMs = Number(take(rest, i++, arg)) * 1000;
    else if (arg === '--dashboard') dashboardPort = port(take(rest, i++, arg));
    else if (arg === '--linger') lingerMs = Number(take(rest, i++, arg)) * 1000;
    else if (arg === '--websocket') websocketPort = port(take(rest, i++, arg));
    else if (arg === '--max-restarts') restarts.maxRestarts = Number(take(rest, i++, arg));
    else if (arg === '--restart-window') restarts.windowMs = Number(take(rest, i++, arg)) * 1000;
    else if (arg === '--restart-strategy') restarts.strategy = strategy(take(rest, i++, arg));
    else if (arg.startsWith('-')) throw new Error(`unknown option '${arg}'\n${USAGE}`);
    else break;
  }
  const script = rest[i];
  if (!script) throw new Error(`launch needs a script\n${USAGE}`);
  count ??= names?.length ?? 1;
  if (!Number.isInteger(count) || count < 1) throw new Error(`-n must be a positive integer\n${USAGE}`);
  names ??= Array.from({ length: count }, (_, k) => `worker${k}`);
  if (names.length !== count) throw new Error(`--names lists ${names.length} names for -n ${count}`);
  if (graceMs !== undefined && !(graceMs >= 0)) throw new Error(`--grace must be a number of seconds\n${USAGE}`);
  if (!(lingerMs >= 0)) throw new Error(`--linger must be a number of seconds\n${USAGE}`);
  if (!Number.isInteger(restarts.maxRestarts) || restarts.maxRestarts < 0) throw new Error(`--max-restarts must be a non-negative integer\n${USAGE}`);
  if (!(restarts.windowMs > 0)) throw new Error(`--restart-window must be a positive number of seconds\n${USAGE}`);
  return { command: 'launch', count, names, namespace, server, script, scriptArgs: rest.slice(i + 1), graceMs, dashboardPort, lingerMs, restarts, ...(websocketPort === undefined ? {} : { websocketPort }) };
}

function strategy(value: string): RestartPolicy['strategy'] {
  if (value !== 'one' && value !== 'all') throw new Error(`--restart-strategy is 'one' or 'all', got '${value}'\n${USAGE}`);
  return value;
}

function parseStatus(rest: string[]): StatusArgs {
  const out: StatusArgs = { command: 'status', server: process.env.NATS_URL, namespace: process.env.TENSORBUS_NAMESPACE, waitMs: 500 };
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--server' || arg === '-s') out.server = take(rest, i++, arg);
    else if (arg === '--namespace') out.namespace = take(rest, i++, arg);
    else if (arg === '--wait') out.waitMs = Number(take(rest, i++, arg));
    else throw new Error(`unknown option '${arg}'\n${USAGE}`);
  }
  return out;
}

function parseGateway(rest: string[]): GatewayArgs {
  const out: GatewayArgs = {
    command: 'gateway', namespace: process.env.TENSORBUS_NAMESPACE, port: 8080, host: undefined, server: process.env.NATS_URL,
    name: undefined, tlsCert: undefined, tlsKey: undefined, auth: undefined,
  };
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--namespace') out.namespace = take(rest, i++, arg);
    else if (arg === '--port' || arg === '-p') out.port = port(take(rest, i++, arg));
    else if (arg === '--host') out.host = take(rest, i++, arg);
    else if (arg === '--server' || arg === '-s' || arg === '--nats') out.server = take(rest, i++, arg);
    else if (arg === '--name') out.name = take(rest, i++, arg);
    else if (arg === '--tls-cert') out.tlsCert = take(rest, i++, arg);
    else if (arg === '--tls-key') out.tlsKey = take(rest, i++, arg);
    else if (arg === '--auth') out.auth = take(rest, i++, arg);
    else throw new Error(`unknown option '${arg}'\n${USAGE}`);
  }
  if ((out.tlsCert === undefined) !== (out.tlsKey === undefined)) throw new Error(`--tls-cert and --tls-key go together\n${USAGE}`);
  return out;
}

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new Error(`a port is an integer from 0 to 65535, got '${value}'\n${USAGE}`);
  return n;
}

function parseDashboard(rest: string[]): DashboardArgs {
  const out: DashboardArgs = { command: 'dashboard', server: process.env.NATS_URL, namespace: process.env.TENSORBUS_NAMESPACE, port: DASHBOARD_PORT, host: '127.0.0.1' };
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i]!;
    if (arg === '--server' || arg === '-s') out.server = take(rest, i++, arg);
    else if (arg === '--namespace') out.namespace = take(rest, i++, arg);
    else if (arg === '--port' || arg === '-p') out.port = port(take(rest, i++, arg));
    else if (arg === '--host') out.host = take(rest, i++, arg);
    else throw new Error(`unknown option '${arg}'\n${USAGE}`);
  }
  return out;
}
