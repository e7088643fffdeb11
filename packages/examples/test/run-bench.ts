/**
 * The bench tests' one way to run the main bench: `src/bench/main.js` in a
 * process of its own, as `npm run bench` runs it, with no NATS_URL (it
 * starts its own nats-server) and the library's notices off, writing its
 * files into a fresh directory.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchReport } from '../src/bench/results.js';

const main = fileURLToPath(new URL('../src/bench/main.js', import.meta.url));

/** A finished run of the bench. */
export interface BenchRun {
  /** Its exit code. */
  code: number | null;
  /** What it printed (its standard error goes to the test's). */
  stdout: string;
  /** The report it wrote (`bench.json`). */
  report(): BenchReport;
  /** The text of a file it wrote into its directory (`bench.md`, `bench-rtt.svg`). */
  file(name: string): string;
}

/** A fresh directory for a run's files, named after `prefix`. */
export function benchDirectory(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Runs the bench with `args`, writing into `out`, and resolves once it exits. */
export async function runBench(out: string, args: string[]): Promise<BenchRun> {
  const child = spawn(process.execPath, [main, ...args, '--out', out], {
    env: { ...process.env, NATS_URL: '', TENSORBUS_QUIET: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  const file = (name: string) => readFileSync(join(out, name), 'utf8');
  return { code, stdout, file, report: () => JSON.parse(file('bench.json')) as BenchReport };
}
