/**
 * The processes of this host that may busy-poll, so that each can tell
 * whether the host has a core for every one of them.
 *
 * A polling window pays only while the process has a core of its own: when
 * the processes that poll outnumber the cores, a window takes the core a
 * peer needs next (the peer that computes the answer, or one that has
 * work), and an application of five processes on two cores was slower with
 * polling than without (docs/data-plane.md, "Busy polling"). No window can
 * see that from inside its own process. So each process that sends on a
 * direct route (from its transport's start) enters a roster the processes of one user on one host share:
 * an empty file named by its process id in a folder of the temporary
 * directory (`tensorbus-pollers-<uid>`, mode 0700, used only when this user
 * owns it and nobody else may write in it), removed when the process
 * exits. Counting the roster's live entries (a file whose process is gone, a
 * `kill -9`'s, is removed by the next count) and comparing with the cores
 * (`os.availableParallelism()`) says whether cores are spare.
 *
 * Nothing here is trusted for more than that: an entry made by anything else
 * of the same user can only turn this process's polling off, which costs
 * latency and never correctness. Where the roster cannot be written or read,
 * cores count as not spare (polling stays off).
 * @module
 */
import { lstatSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { privateFolder, userId } from './private-folder.js';

/** How long a count of the roster is used before the folder is read again, ms. */
export const ROSTER_REFRESH_MS = 250;

/** Whether the process with this id still runs (as far as this process may ask). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user; ESRCH: it is gone.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The default roster folder of this user. */
export function defaultRosterDir(): string {
  return join(tmpdir(), `tensorbus-pollers-${userId() ?? 'user'}`);
}

/** This host's roster of processes that may poll: see the module's comment. */
export class HostPollers {
  private entered = false;
  private failed = false;
  private countedAt = -Infinity;
  private lastCount = 0;

  /**
   * @param dir the roster folder (one per user and host; tests give their own)
   * @param cores the cores the processes share
   * @param pid the id this process enters under
   */
  constructor(
    readonly dir: string = defaultRosterDir(),
    readonly cores: number = availableParallelism(),
    private readonly pid: number = process.pid,
  ) {}

  /** True when the roster has at most as many live processes as the host has cores (this one entered at the first ask). */
  spare(now: number): boolean {
    if (now - this.countedAt >= ROSTER_REFRESH_MS) {
      this.countedAt = now;
      this.lastCount = this.count(this.cores + 1);
    }
    return this.lastCount <= this.cores;
  }

  /**
   * Live processes in the roster, this one included, counted up to `upTo`
   * (the check of cores stops at one more than there are, so a crowded host
   * costs each count at most that many liveness checks); entries of processes
   * that are gone, met on the way, are removed.
   */
  count(upTo = Infinity): number {
    this.enter();
    if (this.failed) return Infinity;
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch {
      this.failed = true;
      return Infinity;
    }
    let live = 0;
    for (const name of names) {
      if (live >= upTo) break;
      if (!/^[1-9]\d{0,9}$/.test(name)) continue;
      const pid = Number(name);
      if (pid === this.pid || alive(pid)) {
        live++;
        continue;
      }
      try {
        unlinkSync(join(this.dir, name));
      } catch {
        // Another process removed it first.
      }
    }
    return live;
  }

  /** Leaves the roster (at exit, and in tests). */
  leave(): void {
    if (!this.entered) return;
    this.entered = false;
    try {
      unlinkSync(join(this.dir, String(this.pid)));
    } catch {
      // Already gone.
    }
  }

  private enter(): void {
    if (this.entered || this.failed) return;
    try {
      // Others may read the roster, never write in it (private-folder.ts).
      if (!privateFolder(this.dir, 0o022, true)) throw new Error('roster folder not private');
      try {
        // Created, never followed: an entry that exists (this pid's, left by a process killed earlier) is reused.
        writeFileSync(join(this.dir, String(this.pid)), '', { flag: 'wx' });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !lstatSync(join(this.dir, String(this.pid))).isFile()) throw error;
      }
      this.entered = true;
      process.once('exit', () => this.leave());
    } catch {
      this.failed = true;
    }
  }
}
