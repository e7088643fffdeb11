/**
 * Whether this machine has a core to spare: the kernel's count of threads
 * runnable right now (the fourth field of `/proc/loadavg`, `runnable/total`,
 * this process's running thread included) against the cores this process
 * may use. Read at most every {@link SAMPLE_MS} ({@link CROWDED_SAMPLE_MS} after a
 * crowded reading; a read costs a few µs), so the answer can be that old. Where `/proc/loadavg` cannot be read (not
 * Linux), the machine is taken to have a core to spare.
 * @module
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** How long a reading is used, ms. */
export const SAMPLE_MS = 20;
/**
 * How long a crowded reading is used, ms: shorter, since the count is of one
 * instant and a thread that runs for a moment (a collector's helper, the
 * compiler) would otherwise keep polling off for {@link SAMPLE_MS}.
 */
export const CROWDED_SAMPLE_MS = 2;

const CORES = availableParallelism();
let sampledAt = Number.NEGATIVE_INFINITY;
let crowded = false;

/** True when more threads are runnable than there are cores (as of a reading at most {@link SAMPLE_MS} old). */
export function machineCrowded(now: number): boolean {
  if (now - sampledAt < (crowded ? CROWDED_SAMPLE_MS : SAMPLE_MS)) return crowded;
  sampledAt = now;
  crowded = runnableThreads() > CORES;
  return crowded;
}

/** Threads runnable right now on this machine, 0 when unknown. */
export function runnableThreads(): number {
  let text: string;
  try {
    text = readFileSync('/proc/loadavg', 'latin1');
  } catch {
    return 0;
  }
  const runnable = / (\d+)\/\d+ /.exec(text);
  return runnable ? Number(runnable[1]) : 0;
}
