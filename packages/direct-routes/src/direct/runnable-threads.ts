/**
 * Whether this machine has a core to spare: the kernel's count of threads
 * runnable right now (the fourth field of `/proc/loadavg`, `runnable/total`,
 * this process's running thread included) against the cores this process
 * may use. The count is of one instant and the processes that poll are in it,
 * so a reading is used for {@link SAMPLE_MS} at most: with several processes
 * of one application on few cores (an agent and four observers on two), each
 * one that starts polling makes the machine crowded for the next, and a
 * reading kept longer let them all poll at once. The file stays open and is
 * read with one `pread` (a few µs). Where `/proc/loadavg` cannot be read (not
 * Linux), the machine is taken to have a core to spare.
 * @module
 */
import { openSync, readSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** How long a reading is used, ms. */
export const SAMPLE_MS = 1;

const CORES = availableParallelism();
let sampledAt = Number.NEGATIVE_INFINITY;
let crowded = false;

/** True when more threads are runnable than there are cores (as of a reading at most {@link SAMPLE_MS} old). */
export function machineCrowded(now: number): boolean {
  if (now - sampledAt < SAMPLE_MS) return crowded;
  sampledAt = now;
  crowded = runnableThreads() > CORES;
  return crowded;
}

/** `/proc/loadavg`, kept open (-1: not opened yet; undefined: cannot be read). */
let loadavg: number | undefined = -1;
const text = Buffer.alloc(128);

/** Threads runnable right now on this machine, 0 when unknown. */
export function runnableThreads(): number {
  try {
    if (loadavg === -1) loadavg = openSync('/proc/loadavg', 'r');
    if (loadavg === undefined) return 0;
    const length = readSync(loadavg, text, 0, text.length, 0);
    const runnable = / (\d+)\/\d+ /.exec(text.toString('latin1', 0, length));
    return runnable ? Number(runnable[1]) : 0;
  } catch {
    loadavg = undefined;
    return 0;
  }
}
