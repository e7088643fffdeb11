/**
 * `tensorbus launch`: starts N worker processes on one bus, prefixes their
 * output with their names, and stops them all when one fails.
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
import { createInterface } from 'node:readline';
import { tensorBackend } from '@tensorbus/core';
import { BACKEND_SAID_ENV } from '@tensorbus/core/internal';
import { loadNatsTransport } from '../nats-loader.js';
import type { LaunchArgs } from './args.js';

/** Exit codes after an interrupt, as a shell reports them (128 + signal number). */
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
async function startLaunchDashboard(url: string, args: LaunchArgs): Promise<{ url: string; close(): Promise<void> }> {
  const { startDashboardFor } = await import('./dashboard.js');
  const dashboard = await startDashboardFor({ server: url, namespace: args.namespace, port: args.dashboardPort!, host: '127.0.0.1', poll: 'always' });
  say(`dashboard: ${dashboard.url}`);
  return dashboard;
}

/** Runs the launch; resolves with the exit code for the launcher. */
export async function launch(args: LaunchArgs): Promise<number> {
  let url = process.env.NATS_URL;
  let server: { stop(): Promise<void> } | undefined;
  let wsUrl: string | undefined;
  if (url && args.websocketPort !== undefined) {
    say('--websocket needs the embedded nats-server: unset NATS_URL, or open a websocket {} block in your own server');
    return 2;
  }
  if (!url) {
    const { startNatsServer } = await loadNatsTransport(
      'NATS_URL is not set, so `tensorbus launch` starts a nats-server,',
      'or set NATS_URL=nats://host:4222 to use a running server',
    );
    const websocket = args.websocketPort === undefined ? undefined : { port: args.websocketPort, quiet: true };
    const started = await startNatsServer({ ownProcessGroup: true, websocket });
    server = started;
    url = started.url;
    wsUrl = started.wsUrl;
    say(`started an embedded nats-server at ${url} (pid ${started.pid})`);
    if (wsUrl) say(`browser workers: ${wsUrl} (WebSocket without TLS, so loopback only)`);
  }
  const dashboard = args.dashboardPort === undefined ? undefined : await startLaunchDashboard(url, args);
  const graceMs = args.graceMs ?? DEFAULT_GRACE_MS;
  const width = Math.max(...args.names.map((n) => n.length));
  const children = new Map<string, ChildProcess>();
  let exitCode = 0;
  let stopping = false;
  let killTimer: NodeJS.Timeout | undefined;
  const alive = () => [...children.values()].filter((c) => c.exitCode === null && c.signalCode === null);
  const signalAll = (signal: NodeJS.Signals) => {
    for (const child of alive()) {
      try {
        // The worker's whole group: what it started goes too.
        process.kill(-child.pid!, signal);
      } catch {
        child.kill(signal);
      }
    }
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
  const exits = args.names.map(
    (name, rank) =>
      new Promise<void>((resolve) => {
        const child = spawn(process.execPath, [args.script, ...args.scriptArgs], {
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
          env: {
            ...process.env,
            NATS_URL: url,
            TENSORBUS_NAME: name,
            TENSORBUS_RANK: String(rank),
            TENSORBUS_WORLD_SIZE: String(args.count),
            TENSORBUS_LAUNCHER_PID: String(process.pid),
            // The launcher said which backend it uses: a worker on the same one says nothing.
            [BACKEND_SAID_ENV]: tensorBackend(),
            ...(wsUrl ? { TENSORBUS_WS_URL: wsUrl } : {}),
            ...(args.namespace ? { TENSORBUS_NAMESPACE: args.namespace } : {}),
          },
        });
        children.set(name, child);
        const prefix = `[${name.padEnd(width)}] `;
        pipeLines(child.stdout, prefix, process.stdout);
        pipeLines(child.stderr, prefix, process.stderr);
        child.on('exit', (code, signal) => {
          if ((code !== 0 || signal) && !stopping) {
            say(`${name} exited with ${signal ?? `code ${code}`}: stopping the other workers`);
            exitCode = code || 1;
            stopAll('SIGTERM');
          }
          resolve();
        });
        child.on('error', (error) => {
          say(`cannot start ${name}: ${error.message}`);
          exitCode ||= 1;
          resolve();
        });
      }),
  );
  await Promise.all(exits);
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
