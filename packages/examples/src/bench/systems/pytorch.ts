/**
 * The PyTorch RPC peer: runs the anchor scripts of `packages/examples/bench-anchors`
 * (torch_rpc.py: rpc_sync no-op and identity round trips; torch_rpc_throughput.py:
 * rpc_async calls per second, 64 in flight; torch_rref_autograd.py: RRef
 * cycles and a dist autograd step) with the system's python, in the same run
 * as tensorbus, and reads the JSON lines they print. The scripts are copies of
 * the reference anchors, changed only so that each case's warm-up is given on
 * the command line and one case can run alone: the bench runs a case's script
 * once in each of the case's blocks and gives every run the untimed calls it
 * gives tensorbus in the whole case ({@link untimedCalls}; see
 * bench-anchors/README.md).
 *
 * Python is `TENSORBUS_PYTHON` or /usr/bin/python3; `TENSORBUS_ANCHORS_DIR`
 * runs the scripts of another folder instead.
 * @module
 */
import { spawn, spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { commandLine, descendants, statusBytes } from '../process/memory.js';
import { casePlan, type BenchCase } from '../cases.js';

/** What the bench prints when torch cannot be imported. */
export const PYTORCH_MISSING = 'PyTorch RPC column missing: install with `apt-get install -y python3-torch`';

/** The python that runs the scripts. */
export const PYTHON = process.env.TENSORBUS_PYTHON ?? '/usr/bin/python3';

/** One JSON line of the anchor scripts. */
export interface AnchorLine {
  system: string;
  case: string;
  bytes?: number;
  median_us?: number;
  calls_per_s?: number;
  window?: number;
}

/** Peak resident memory of one process of a script run. */
export interface ProcessPeak {
  role: string;
  pid: number;
  peakBytes: number;
}

/** The anchor scripts' folder, beside the package's sources (this file is dist/src/bench/systems/). */
export const ANCHORS_DIR = fileURLToPath(new URL('../../../../bench-anchors/', import.meta.url));

/** The folder the scripts are run from: {@link ANCHORS_DIR}, or `TENSORBUS_ANCHORS_DIR` (tests put stand-ins there). */
export function anchorsDir(): string {
  return process.env.TENSORBUS_ANCHORS_DIR ? resolve(process.env.TENSORBUS_ANCHORS_DIR) : ANCHORS_DIR;
}

/**
 * The untimed calls (cycles, steps) the bench gives tensorbus in case `c`:
 * the first block's warm-up and the untimed calls before each later block,
 * all of which the PyTorch script for that case is given as its warm-up.
 */
export function untimedCalls(c: BenchCase, quick: boolean): number {
  const plan = casePlan(c, quick);
  let untimed = 0;
  for (let b = 0; b < plan.blocks; b++) {
    const p = plan.params(b).plan as { warmup?: number; warmupCalls?: number };
    untimed += p.warmup ?? p.warmupCalls ?? 0;
  }
  return untimed;
}

/** torch's version when python can import it, else why not. */
export function torchAvailability(): { version?: string; python?: string; reason?: string } {
  const probe = spawnSync(PYTHON, ['-c', 'import sys, torch; print(torch.__version__, sys.version.split()[0])'], { encoding: 'utf8', timeout: 120_000 });
  if (probe.status !== 0) return { reason: `${PYTHON} cannot import torch: ${(probe.stderr || String(probe.error ?? '')).trim().split('\n').pop()}` };
  const [version, python] = probe.stdout.trim().split(' ');
  return { version, python };
}

/**
 * Runs an anchor script and resolves with its JSON lines; with `watchPeak`,
 * also the peak resident memory of each worker it spawned (rank 0, the
 * caller, is the first), polled from /proc while it runs.
 */
export function runAnchorScript(script: string, args: string[], watchPeak = false): Promise<{ lines: AnchorLine[]; peaks: ProcessPeak[] }> {
  const dir = anchorsDir();
  const child = spawn(PYTHON, [join(dir, script), ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: AnchorLine[] = [];
  const peaks = new Map<number, number>();
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    let newline: number;
    while ((newline = stdout.indexOf('\n')) >= 0) {
      const line = stdout.slice(0, newline).trim();
      stdout = stdout.slice(newline + 1);
      if (line.startsWith('{')) lines.push(JSON.parse(line) as AnchorLine);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
  const poll = () => {
    for (const pid of [child.pid!, ...descendants(child.pid!)]) {
      const peak = statusBytes(pid, 'VmHWM');
      if (peak !== undefined && (pid === child.pid || commandLine(pid).includes('spawn_main'))) peaks.set(pid, Math.max(peaks.get(pid) ?? 0, peak));
    }
  };
  const timer = watchPeak ? setInterval(poll, 100) : undefined;
  return new Promise((resolvePromise, reject) => {
    child.on('exit', (code) => {
      if (timer) clearInterval(timer);
      if (code !== 0) {
        reject(new Error(`${script} exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`));
        return;
      }
      const workers = [...peaks.keys()].filter((pid) => pid !== child.pid).sort((a, b) => a - b);
      const roles = ['rank 0 (caller)', 'rank 1 (callee)'];
      resolvePromise({
        lines,
        peaks: [
          ...workers.map((pid, i) => ({ role: roles[i] ?? `worker ${i}`, pid, peakBytes: peaks.get(pid)! })),
          ...(peaks.has(child.pid!) ? [{ role: 'launcher (mp.spawn parent)', pid: child.pid!, peakBytes: peaks.get(child.pid!)! }] : []),
        ],
      });
    });
  });
}
