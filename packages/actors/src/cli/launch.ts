/**
 * `tensorbus launch`: starts N worker processes on one bus, prefixes their
 * output with their names, and stops them all when one fails.
 *
 * Supervision (`--max-restarts N`): a worker that exits non-zero or is killed
 * is started again under its name and rank, with TENSORBUS_RESTART_COUNT set,
 * while the restart budget lasts (restart-budget.ts); a worker that the
 * others' membership declares failed while its process still runs (stopped,
 * wedged) is killed first (launcher-report.ts). With `--restart-strategy all`
 * the others are stopped and restarted with it. Past the budget the group
 * stops as an unsupervised one does. See docs/supervision.md.
 *
 * Signals, as torchrun handles them: the workers and the embedded nats-server
 * each run in a process group of their own, so a terminal's Ctrl-C reaches
 * the launcher alone. The first SIGINT/SIGTERM is passed on to every worker
 * once (they may shut down gracefully; the bus stays up for that); a second
 * one, or the end of the grace period, kills them. The nats-server is stopped
 * last. The exit code is the failing worker's, or 130 (143 for SIGTERM) after
 * an interrupt. Workers watch the launcher (`TENSORBUS_LAUNCHER_PID`) and stop
 * if it dies without telling them.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import { createInterface } from 'node:readline';
import { tensorBackend } from '@tensorbus/core';
import { BACKEND_SAID_ENV } from '@tensorbus/core/internal';
import { loadNatsTransport } from '../nats-loader.js';
import type { LaunchArgs } from './args.js';
import { loadDashboardCommand, type DashboardCommandModule, type RunningDashboard } from './command-packages.js';
import type { LauncherReport } from './launcher-report.js';
import { RestartBudget } from './restart-budget.js';

/** Exit codes after an interrupt, as a shell reports them (128 + signal number). */
/** Signals the launcher sends to stop workers: a worker ended by one of them while stopping is no news. */
const STOP_SIGNALS: ReadonlySet<string> = new Set(['SIGINT', 'SIGTERM', 'SIGKILL']);

const INTERRUPT_CODES: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 130, SIGTERM: 143 };
/** Workers that have not stopped this long after a failure or an interrupt are killed, ms. */
const DEFAULT_GRACE_MS = 30_000;

function pipeLines(stream: NodeJS.ReadableStream | null, prefix: string, out: NodeJS.WriteStream): void {
  if (!stream) return;
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => out.write(`${prefix}${line}\n`));
}

function say(line: string): void {
  process.stderr.write(`[tensorbus] ${line}\n`);
}

/** Starts the dashboard of the launched namespace (`--dashboard PORT`) and says where it is. */
async function startLaunchDashboard(commands: DashboardCommandModule, url: string, args: LaunchArgs): Promise<RunningDashboard> {
  const dashboard = await commands.startDashboardFor({ server: url, namespace: args.namespace, port: args.dashboardPort!, host: '127.0.0.1', poll: 'always' });
  say(`dashboard: ${dashboard.url}`);
  return dashboard;
}

/** How long after a worker exits the launcher still waits for the rest of its output (held open only by what it started). */
const OUTPUT_DRAIN_MS = 1_000;

/**
 * Calls `ended` once `child` exited and its output was read to the end: the
 * 'close' event, so a worker's last lines are printed before the launcher
 * moves on (and maybe exits); or OUTPUT_DRAIN_MS after 'exit', when a process
 * the worker started keeps its stdout open.
 */
function onEnded(child: ChildProcess, ended: (code: number | null, signal: NodeJS.Signals | null) => void): void {
  let done = false;
  const finish = (code: number | null, signal: NodeJS.Signals | null) => {
    if (done) return;
    done = true;
    ended(code, signal);
  };
  child.once('close', finish);
  child.once('exit', (code, signal) => setTimeout(() => finish(code, signal), OUTPUT_DRAIN_MS).unref());
}

/** Sends `signal` to a worker's whole process group: what it started goes too. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    child.kill(signal);
  }
}

/** A worker's exit code as a shell reports it: its code, or 128 + the number of the signal that killed it. */
function exitCodeOf(code: number | null, signal: NodeJS.Signals | null): number {
  if (signal !== null) return 128 + (constants.signals[signal] ?? 0);
  return code || 1;
}

/** One worker of the group across its restarts. */
interface WorkerSlot {
  readonly name: string;
  readonly rank: number;
  /** Times it was restarted (its TENSORBUS_RESTART_COUNT). */
  restarts: number;
  /** The instance id its current incarnation reported once it joined. */
  inst: string | undefined;
  /** Stopped to be restarted with a failed one (`--restart-strategy all`). */
  restartOnExit: boolean;
}

/** Runs the launch; resolves with the exit code for the launcher. */
export async function launch(args: LaunchArgs): Promise<number> {
  let url = args.server;
  let server: { stop(): Promise<void> } | undefined;
  let wsUrl: string | undefined;
  if (url && args.websocketPort !== undefined) {
    say('--websocket needs the embedded nats-server: pass no --server and unset NATS_URL, or open a websocket {} block in your own server');
    return 2;
  }
  // Before anything starts: a missing @tensorbus/dashboard is said at once, not after a nats-server was started.
  const dashboardCommands = args.dashboardPort === undefined ? undefined : await loadDashboardCommand('`tensorbus launch --dashboard`');
  if (!url) {
    const { startNatsServer } = await loadNatsTransport(
      'NATS_URL is not set, so `tensorbus launch` starts a nats-server,',
      'or set NATS_URL=nats://host:4222 (or pass --server URL) to use a running server',
    );
    const websocket = args.websocketPort === undefined ? undefined : { port: args.websocketPort, quiet: true };
    // JetStream keeps the workers' checkpoints (checkpointStore) across their restarts, for the run.
    const started = await startNatsServer({ ownProcessGroup: true, jetstream: true, websocket });
    server = started;
    url = started.url;
    wsUrl = started.wsUrl;
    say(`started an embedded nats-server at ${url} (pid ${started.pid})`);
    if (wsUrl) say(`browser workers: ${wsUrl} (WebSocket without TLS, so loopback only)`);
  }
  const dashboard = dashboardCommands === undefined ? undefined : await startLaunchDashboard(dashboardCommands, url, args);
  const graceMs = args.graceMs ?? DEFAULT_GRACE_MS;
  // The group's checkpoints are signed with one secret: the user's, or one made for this run.
  const checkpointSecret = process.env.TENSORBUS_CHECKPOINT_SECRET ?? randomBytes(32).toString('hex');
  const width = Math.max(...args.names.map((n) => n.length));
  const children = new Map<string, ChildProcess>();
  let exitCode = 0;
  let stopping = false;
  let killTimer: NodeJS.Timeout | undefined;
  const alive = () => [...children.values()].filter((c) => c.exitCode === null && c.signalCode === null);
  const signalAll = (signal: NodeJS.Signals) => {
    for (const child of alive()) signalGroup(child, signal);
  };
  /** Asks every worker to stop with `signal`, and kills those still running after the grace period. */
  const stopAll = (signal: NodeJS.Signals) => {
    stopping = true;
    signalAll(signal);
    killTimer ??= setTimeout(() => {
      const left = alive();
      if (left.length > 0) say(`${left.length} worker(s) still running ${graceMs / 1000} s later: killing them`);
      signalAll('SIGKILL');
    }, graceMs);
    killTimer.unref();
  };
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts++;
    exitCode = INTERRUPT_CODES[signal] ?? 130;
    if (interrupts === 1) {
      say(`${signal}: asking the workers to stop (again to kill them)`);
      stopAll(signal);
    } else {
      say(`${signal} again: killing the workers`);
      signalAll('SIGKILL');
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const supervising = args.restarts.maxRestarts > 0;
  const budget = new RestartBudget(args.restarts);
  let running = args.count;
  let allFinished!: () => void;
  const finished = new Promise<void>((resolve) => (allFinished = resolve));
  const slots: WorkerSlot[] = args.names.map((name, rank) => ({ name, rank, restarts: 0, inst: undefined, restartOnExit: false }));
  const slotOf = (name: unknown) => slots.find((slot) => slot.name === name);
  /** A worker's run ended for good. */
  const settle = () => {
    if (--running === 0) allFinished();
  };
  /** Stops a running worker so that it is started again (one-for-all), or kills one declared failed. */
  const stopToRestart = (slot: WorkerSlot, signal: NodeJS.Signals) => {
    const child = children.get(slot.name);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    signalGroup(child, signal);
    if (signal !== 'SIGKILL') setTimeout(() => signalGroup(child, 'SIGKILL'), graceMs).unref();
  };
  /** A supervised worker's report (launcher-report.ts): its instance, or a member its membership declared failed. */
  const onReport = (from: WorkerSlot, report: unknown) => {
    if (typeof report !== 'object' || report === null) return;
    const { k, name, inst } = report as Partial<LauncherReport>;
    if (typeof inst !== 'string') return;
    if (k === 'tensorbus.joined' && name === from.name) from.inst = inst;
    const failed = k === 'tensorbus.failed' ? slotOf(name) : undefined;
    // Only the incarnation that was declared failed: a late report never kills the next one.
    if (failed === undefined || failed.inst !== inst || stopping) return;
    failed.inst = undefined;
    say(`${failed.name} was declared failed by ${from.name} (no heartbeat) but its process runs: killing it`);
    stopToRestart(failed, 'SIGKILL');
  };
  const start = (slot: WorkerSlot) => {
    const { name, rank } = slot;
    const child = spawn(process.execPath, [args.script, ...args.scriptArgs], {
      stdio: supervising ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: {
        ...process.env,
        NATS_URL: url,
        TENSORBUS_NAME: name,
        TENSORBUS_RANK: String(rank),
        TENSORBUS_WORLD_SIZE: String(args.count),
        TENSORBUS_LAUNCHER_PID: String(process.pid),
        TENSORBUS_CHECKPOINT_SECRET: checkpointSecret,
        // The launcher said which backend it uses: a worker on the same one says nothing.
        [BACKEND_SAID_ENV]: tensorBackend(),
        ...(wsUrl ? { TENSORBUS_WS_URL: wsUrl } : {}),
        ...(supervising ? { TENSORBUS_RESTART_COUNT: String(slot.restarts) } : {}),
        ...(args.namespace ? { TENSORBUS_NAMESPACE: args.namespace } : {}),
      },
    });
    children.set(name, child);
    const prefix = `[${name.padEnd(width)}] `;
    pipeLines(child.stdout, prefix, process.stdout);
    pipeLines(child.stderr, prefix, process.stderr);
    if (supervising) child.on('message', (report) => onReport(slot, report));
    onEnded(child, (code, signal) => {
      slot.inst = undefined;
      const failed = code !== 0 || signal !== null;
      const how = signal ?? `code ${code}`;
      if (slot.restartOnExit && !stopping) {
        slot.restartOnExit = false;
        slot.restarts++;
        say(`restarting ${name} with the others (restart ${slot.restarts})`);
        start(slot);
        return;
      }
      if (failed && !stopping && supervising) {
        if (budget.take()) {
          slot.restarts++;
          say(`${name} exited with ${how}: restarting it (restart ${slot.restarts}, ${budget.describe()} allowed)`);
          if (args.restarts.strategy === 'all') {
            for (const other of slots) if (other !== slot) (other.restartOnExit = true), stopToRestart(other, 'SIGTERM');
          }
          start(slot);
          return;
        }
        say(`${name} exited with ${how} after ${budget.describe()}: not restarting it`);
      }
      // While stopping, the signal the launcher sent is the expected end; anything else is said.
      if (failed && stopping && !(signal !== null && STOP_SIGNALS.has(signal))) say(`${name} exited with ${how} while stopping`);
      if (failed && !stopping) {
        say(`${name} exited with ${how}: stopping the other workers`);
        exitCode = exitCodeOf(code, signal);
        stopAll('SIGTERM');
      }
      settle();
    });
    child.on('error', (error) => {
      say(`cannot start ${name}: ${error.message}`);
      exitCode ||= 1;
      if (child.exitCode === null && child.signalCode === null && child.pid === undefined) settle();
    });
  };
  slots.forEach(start);
  await finished;
  clearTimeout(killTimer);
  if (dashboard !== undefined && args.lingerMs > 0 && interrupts === 0) {
    say(`the workers finished; the dashboard stays at ${dashboard.url} for ${args.lingerMs / 1000} s (Ctrl-C to stop)`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, args.lingerMs);
      const stop = () => {
        clearTimeout(timer);
        resolve();
      };
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
  }
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  await dashboard?.close();
  await server?.stop();
  return exitCode;
}
