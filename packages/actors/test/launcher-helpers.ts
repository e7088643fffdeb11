/**
 * Runs `tensorbus launch` as a terminal does, for the launcher's tests: in a
 * process group of its own, with its output kept, and tells which of the
 * processes it started still run; and runs a Node process (the CLI, a worker)
 * to its end in a terminal's clean environment, for the CLI's tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

/** The environment of a terminal with no tensorbus variables set. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TENSORBUS_QUIET: '1', ...extra };
  for (const key of ['NATS_URL', 'TENSORBUS_NAME', 'TENSORBUS_RANK', 'TENSORBUS_WORLD_SIZE', 'TENSORBUS_NAMESPACE', 'TENSORBUS_LAUNCHER_PID', 'TENSORBUS_RESTART_COUNT']) {
    if (!(key in extra)) delete env[key];
  }
  return env;
}

/** A process that ran to its end: its exit code and what it printed. */
export interface Ran {
  code: number | null;
  out: string;
  err: string;
}

/**
 * Runs `node …args` in the environment of a terminal with no tensorbus
 * variables and no NODE_OPTIONS (plus `env`), killed after 60 s; resolves
 * once it exits.
 */
export async function runNode(args: string[], env: Record<string, string> = {}): Promise<Ran> {
  const childEnv = cleanEnv(env);
  if (!('NODE_OPTIONS' in env)) delete childEnv.NODE_OPTIONS;
  const child = spawn(process.execPath, args, { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(killer);
  return { code, out, err };
}

export interface Launched {
  launcher: ChildProcess;
  out: () => string;
  err: () => string;
  /** Resolves, with the time it saw it, once `pattern` has been printed `count` times on stdout or stderr. */
  printed(pattern: RegExp, count?: number, timeoutMs?: number): Promise<number>;
  exit: Promise<number | null>;
}

/** Starts `tensorbus launch` as the leader of a process group of its own (a terminal's foreground job). */
export function launch(args: string[]): Launched {
  const launcher = spawn(process.execPath, [cli, 'launch', ...args], { env: cleanEnv(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  launcher.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  launcher.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = once(launcher, 'exit').then(([code]) => code as number | null);
  return {
    launcher,
    out: () => out,
    err: () => err,
    exit,
    async printed(pattern, count = 1, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      const global = new RegExp(pattern.source, 'g');
      while (((out + err).match(global)?.length ?? 0) < count) {
        if (Date.now() > deadline) throw new Error(`not printed in time: ${pattern}\n--- stdout\n${out}\n--- stderr\n${err}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return Date.now();
    },
  };
}

export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Pids of the workers (from their `ready` lines) and of the embedded nats-server. */
export function pidsOf(launched: Launched): number[] {
  const workers = [...launched.out().matchAll(/ready \S+ (\d+)/g)].map((m) => Number(m[1]));
  const server = /embedded nats-server at \S+ \(pid (\d+)\)/.exec(launched.err());
  return [...workers, ...(server ? [Number(server[1])] : [])];
}

export async function allGone(pids: number[], timeoutMs = 10_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  while (pids.some(running) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return pids.filter(running);
}

