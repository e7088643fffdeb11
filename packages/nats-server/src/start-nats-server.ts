/**
 * Starts a nats-server on a free loopback port: for tests, the demo and the
 * launcher, so a user never has to start one by hand.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { findExecutable, findNatsServer, INSTALL_HINT } from './find-binary.js';
import { freePort, waitForPort } from './free-port.js';

/** Options of {@link startNatsServer}. */
export interface NatsServerOptions {
  /** Client port; default a free one. */
  port?: number;
  /** Text of a nats-server configuration file (accounts, authorization, cluster, ...). */
  config?: string;
  /**
   * Path of a nats-server configuration file to use. With `config` or
   * `maxPayload` too, the file is included first and those lines follow.
   * The port and address are always the launcher's (`-a`, `-p` win over the file).
   */
  configFile?: string;
  /** Environment of the server process, added to this process's (a config file reads `$NAME` from it). */
  env?: Record<string, string>;
  /** `max_payload` in bytes (default: the server's, 1 MB). */
  maxPayload?: number;
  /** More command-line arguments. */
  args?: string[];
  /** Echo the server's log to stderr. */
  verbose?: boolean;
  /** How long to wait for the server to listen, ms (default 10,000). */
  startTimeoutMs?: number;
  /**
   * Runs the server in a process group of its own, so a terminal's Ctrl-C
   * (SIGINT to the foreground group) does not reach it: its starter stops it
   * when it is done (the launcher does, after its workers). Default false.
   */
  ownProcessGroup?: boolean;
  /**
   * Also serve NATS over WebSocket (for browser workers): `true` on a free
   * port, or `{ port }`. Without TLS it listens on 127.0.0.1 only (a page
   * elsewhere needs a TLS front such as a reverse proxy), and says so on
   * stderr unless `quiet`; the address is {@link NatsServer.wsUrl}.
   */
  websocket?: boolean | { port?: number; quiet?: boolean };
  /**
   * Enables JetStream (checkpoints, checkpoint-store.ts). `true` keeps its
   * files in the server's temporary directory, removed by `stop()`; a
   * `storeDir` is kept (a later server started on it finds its streams again).
   * `restart()` keeps the store either way.
   */
  jetstream?: boolean | { storeDir: string };
}

/** A running nats-server. */
export interface NatsServer {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  /** `ws://127.0.0.1:<port>` when started with `websocket`, else undefined. */
  readonly wsUrl: string | undefined;
  /** Stops the server (SIGTERM, then SIGKILL) and removes its files. */
  stop(): Promise<void>;
  /** Restarts the server on the same port (to test reconnection). */
  restart(): Promise<void>;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  const killAll = () => {
    for (const child of running) child.kill('SIGKILL');
  };
  // Servers die with the process that started them, however it exits.
  process.on('exit', killAll);
  // A signal that would kill the process skips 'exit': take the servers along first. A process
  // with its own handler for the signal decides for itself (and its exit still runs the hook).
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      if (process.listenerCount(signal) > 1) return;
      killAll();
      process.removeListener(signal, onSignal);
      process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

/**
 * Starts nats-server on 127.0.0.1 and resolves once it accepts connections.
 * Rejects with an error naming the install command when the binary is missing.
 *
 * @example
 * ```ts
 * const server = await startNatsServer();
 * const transport = await natsTransport({ servers: server.url });
 * // ...
 * await server.stop();
 * ```
 */
export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  const binary = findNatsServer();
  if (!binary) throw new Error(INSTALL_HINT);
  // On Linux, util-linux's `setpriv` runs the server with a parent-death signal: a starter killed with SIGKILL
  // (which runs no exit hook) takes its server along. It execs the server, so the child's pid is the server's.
  // Elsewhere, or without util-linux, only the exit hook stops servers.
  const deathGuard = process.platform === 'linux' ? findExecutable('setpriv') : undefined;
  installExitHook();
  const port = options.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'tensorbus-nats-'));
  const args = ['-a', '127.0.0.1', '-p', String(port)];
  const lines = [options.config ?? ''];
  if (options.maxPayload !== undefined) lines.push(`max_payload: ${options.maxPayload}`);
  const wsPort = await websocketPort(options.websocket);
  if (wsPort !== undefined) lines.push(websocketBlock(wsPort, options.websocket));
  if (options.jetstream) {
    const storeDir = options.jetstream === true ? join(dir, 'jetstream') : resolve(options.jetstream.storeDir);
    lines.push(`jetstream { store_dir: ${JSON.stringify(storeDir)} }`);
  }
  const configText = lines.join('\n').trim();
  if (options.configFile && !configText) {
    args.push('-c', resolve(options.configFile));
  } else if (configText || options.configFile) {
    const configFile = join(dir, 'nats.conf');
    // nats-server resolves includes relative to the including file, even absolute ones.
    const include = options.configFile ? `include "${relative(dir, resolve(options.configFile))}"\n` : '';
    writeFileSync(configFile, include + configText);
    args.push('-c', configFile);
  }
  args.push(...(options.args ?? []));

  let child: ChildProcess;
  let log = '';
  const launch = async () => {
    // The parent-death signal follows the thread that spawns: the server also ends with a worker thread that started it.
    child = spawn(deathGuard ?? binary, deathGuard ? ['--pdeathsig', 'KILL', '--', binary, ...args] : args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: options.env ? { ...process.env, ...options.env } : process.env,
      detached: options.ownProcessGroup === true,
    });
    running.add(child);
    const collect = (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-8_000);
      if (options.verbose) process.stderr.write(chunk);
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    // A server must not keep its starter alive: it is killed when the starter exits.
    child.unref();
    (child.stdout as unknown as { unref?: () => void }).unref?.();
    (child.stderr as unknown as { unref?: () => void }).unref?.();
    child.on('exit', () => running.delete(child));
    try {
      const alive = () => child.exitCode === null && child.signalCode === null;
      await waitForPort(port, options.startTimeoutMs ?? 10_000, alive);
      if (wsPort !== undefined) await waitForPort(wsPort, options.startTimeoutMs ?? 10_000, alive);
    } catch (error) {
      child.kill('SIGKILL');
      throw new Error(`nats-server (${binary}) did not start: ${(error as Error).message}\n${log}`);
    }
  };
  const kill = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await launch();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    wsUrl: wsPort === undefined ? undefined : `ws://127.0.0.1:${wsPort}`,
    get pid() {
      return child.pid!;
    },
    stop: async () => {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
    restart: async () => {
      await kill();
      await launch();
    },
  };
}

/** The WebSocket port `option` asks for (a free one for `true`), undefined when off. */
async function websocketPort(option: NatsServerOptions['websocket']): Promise<number | undefined> {
  if (!option) return undefined;
  const port = option === true ? undefined : option.port;
  if (port === undefined || port === 0) return freePort();
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new RangeError(`websocket port must be an integer in 1..65535, got ${port}`);
  return port;
}

/**
 * The `websocket {}` block: plain WebSocket (no_tls) on loopback only, so
 * nothing off this host reaches the bus unencrypted. Says so unless quiet.
 */
function websocketBlock(port: number, option: NatsServerOptions['websocket']): string {
  if (!(typeof option === 'object' && option.quiet)) {
    process.stderr.write(`[tensorbus] nats-server WebSocket on ws://127.0.0.1:${port}: without TLS, so on loopback only (put a TLS proxy in front to serve other hosts)\n`);
  }
  return `websocket {\n  host: "127.0.0.1"\n  port: ${port}\n  no_tls: true\n}`;
}
