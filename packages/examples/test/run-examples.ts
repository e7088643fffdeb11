/**
 * Runs what the examples package ships as a user runs it, for its tests: an
 * example through `tensorbus launch`, or the main bench as `npm run bench`
 * runs it; each in a process of its own, on its own embedded nats-server (no
 * NATS_URL), with the library's notices off, collecting what it prints (its
 * standard error also goes to the test's).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchReport } from '../src/bench/results.js';

const cli = fileURLToPath(new URL('../../../actors/dist/src/cli/main.js', import.meta.url));
const benchMain = fileURLToPath(new URL('../src/bench/main.js', import.meta.url));

/** A process of the examples package that is running, with what it printed so far. */
interface Running {
  child: ChildProcess;
  output: { stdout: string; stderr: string };
  exited: Promise<number | null>;
}

/** Starts `node …args` as a user's terminal would for an example. */
function start(args: string[]): Running {
  const child = spawn(process.execPath, args, {
    env: { ...process.env, NATS_URL: '', TENSORBUS_QUIET: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d: Buffer) => (output.stdout += d));
  child.stderr!.on('data', (d: Buffer) => {
    output.stderr += d;
    process.stderr.write(d);
  });
  return { child, output, exited: new Promise((resolve) => child.on('exit', resolve)) };
}

/** More of a launch: options of the launcher itself, and what to do while it runs (given its output so far). */
export interface LaunchExtras {
  launcherArgs?: string[];
  during?: (output: () => string) => Promise<void>;
}

/** Launches `script` (a path under dist/src) as the workers `names`, with `args`; resolves when all exit. */
export async function launchExample(names: string[], script: string, args: string[], extras: LaunchExtras = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const main = fileURLToPath(new URL(`../src/${script}`, import.meta.url));
  const { child, output, exited } = start([cli, 'launch', '-n', String(names.length), '--names', names.join(','), ...(extras.launcherArgs ?? []), main, ...args]);
  try {
    await extras.during?.(() => output.stdout + output.stderr);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const code = await exited;
  return { code, ...output };
}

/** A finished run of the bench. */
export interface BenchRun {
  /** Its exit code. */
  code: number | null;
  /** What it printed on its standard output. */
  stdout: string;
  /** The report it wrote (`bench.json`). */
  report(): BenchReport;
  /** The text of a file it wrote into its directory (`bench.md`, `bench-rtt.svg`). */
  file(name: string): string;
}

/** A fresh directory for a bench run's files, named after `prefix`. */
export function benchDirectory(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Runs the main bench with `args`, writing into `out`, and resolves once it exits. */
export async function runBench(out: string, args: string[]): Promise<BenchRun> {
  const { output, exited } = start([benchMain, ...args, '--out', out]);
  const code = await exited;
  const file = (name: string) => readFileSync(join(out, name), 'utf8');
  return { code, stdout: output.stdout, file, report: () => JSON.parse(file('bench.json')) as BenchReport };
}
