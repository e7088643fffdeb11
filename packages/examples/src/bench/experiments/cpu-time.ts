/**
 * CPU time of processes, for the experiments' per-call CPU figures: what a
 * mechanism such as busy polling costs shows in CPU, not in time per call.
 * Read from /proc (Linux): a process's own user and system time, or the
 * time of this process's children that have been waited for (an example
 * run through `tensorbus launch`: the launcher waits for its workers, the
 * bench for the launcher). Where /proc cannot be read it is undefined.
 * @module
 */
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ; 100 on every Linux build in use). */
const TICKS_PER_SECOND = 100;

/** Fields of /proc/<pid>/stat after the command name, which may hold spaces and parentheses. */
function statFields(pid: number | 'self'): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** CPU ms (user + system) spent so far by the processes `pids`, summed; undefined when one cannot be read. */
export function processCpuMs(pids: readonly number[]): number | undefined {
  let ticks = 0;
  for (const pid of pids) {
    const fields = statFields(pid);
    if (!fields) return undefined;
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the name.
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / TICKS_PER_SECOND;
}

/** CPU ms (user + system) of this process's waited-for children so far; undefined off Linux. */
export function childrenCpuMs(): number | undefined {
  const fields = statFields('self');
  if (!fields) return undefined;
  // cutime and cstime: fields 16 and 17 of stat.
  return ((Number(fields[13]) + Number(fields[14])) * 1000) / TICKS_PER_SECOND;
}
