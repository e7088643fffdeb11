/**
 * PyTorch RPC between two hosts: rank 0 in host A, rank 1 in host B, each a
 * process of our own script `packages/examples/python/torch_rpc_two_hosts.py`
 * (the anchor scripts start both ranks in one namespace), rendezvous at A's
 * address. Reads rank 0's JSON lines, and polls both ranks' peak resident
 * memory (VmHWM) every 100 ms while they run.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TwoHosts } from '@tensorbus/nats-transport/testing';
import { statusBytes } from '../process/memory.js';
import type { CaseResult, PeakRecord } from '../results.js';
import { PYTHON, type AnchorLine } from './pytorch.js';

/** The script, beside the package's sources (this file is dist/src/bench/systems/). */
export const TWO_HOST_SCRIPT = fileURLToPath(new URL('../../../../python/torch_rpc_two_hosts.py', import.meta.url));

/** What TensorPipe is allowed between the hosts, in words (the script's choice; see its docstring). */
export const PYTORCH_TWO_HOST_PATH =
  'TensorPipe restricted to what two machines have: the uv transport (TCP) and the mpt_uv and basic channels, on the veth pair; ' +
  'it picks mpt_uv, which spreads a tensor over several TCP connections, each with its own loop thread ' +
  '(left to itself it picks the cma channel, process_vm_readv between the two processes, since network namespaces of one kernel share its boot id, pid and user namespace)';

/** The rendezvous port on host A (inside a namespace of our own: nothing else listens there). */
const MASTER_PORT = 29_500;

/** How long the whole script may take, ms (400 MB over TCP: a few seconds a call). */
const TIMEOUT_MS = 300_000;

function lineReader(child: ChildProcess, onLine: (line: string) => void): () => string {
  let text = '';
  let tail = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    let newline: number;
    while ((newline = text.indexOf('\n')) >= 0) {
      onLine(text.slice(0, newline).trim());
      text = text.slice(newline + 1);
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-2_000)));
  return () => tail.trim().split('\n').slice(-3).join(' | ');
}

/**
 * Runs the identity round trips of `sizes` (bytes) between the two hosts and
 * resolves with one result per size (its case id from `caseOf`) and the peak
 * memory of each rank. Rejects when a rank fails or a size has no figure.
 * `python` and `script` replace the interpreter and the script (tests run a
 * stand-in).
 */
export async function runPytorchTwoHosts(
  hosts: TwoHosts,
  sizes: number[],
  caseOf: (bytes: number) => string,
  { python = PYTHON, script = TWO_HOST_SCRIPT }: { python?: string; script?: string } = {},
): Promise<{ results: CaseResult[]; peaks: PeakRecord[] }> {
  const [addressA] = hosts.addresses;
  const rank = (i: 0 | 1) => {
    const [command, args] = hosts.wrap(i, python, [script, String(i), addressA, String(MASTER_PORT), sizes.join(','), hosts.devices[i]]);
    return spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  };
  const lines: AnchorLine[] = [];
  // The callee first: rank 0 is the rendezvous and waits for it.
  const callee = rank(1);
  const caller = rank(0);
  const calleeSaid = lineReader(callee, () => undefined);
  const callerSaid = lineReader(caller, (line) => {
    if (line.startsWith('{')) lines.push(JSON.parse(line) as AnchorLine);
  });
  const ranks = [caller, callee];
  const peaks = new Map<number, number>();
  const poll = setInterval(() => {
    for (const child of ranks) {
      const peak = statusBytes(child.pid!, 'VmHWM');
      if (peak !== undefined) peaks.set(child.pid!, Math.max(peaks.get(child.pid!) ?? 0, peak));
    }
  }, 100);
  const exited = (child: ChildProcess, name: string, tail: () => string) =>
    new Promise<void>((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${name} exited with ${code}: ${tail()}`)))));
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      Promise.all([exited(caller, 'rank 0', callerSaid), exited(callee, 'rank 1', calleeSaid)]),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`PyTorch between two hosts took over ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS))),
    ]);
  } finally {
    clearTimeout(timer);
    clearInterval(poll);
    for (const child of ranks) if (child.exitCode === null) child.kill('SIGKILL');
  }
  const results: CaseResult[] = [];
  for (const bytes of sizes) {
    const line = lines.find((l) => l.case === 'identity' && l.bytes === bytes);
    if (line?.median_us === undefined) throw new Error(`torch_rpc_two_hosts.py printed no figure for ${bytes} bytes`);
    results.push({ caseId: caseOf(bytes), system: 'pytorch-2hosts', medianMs: line.median_us / 1000 });
  }
  const roles = ['rank 0 (caller, host A)', 'rank 1 (callee, host B)'];
  const peakRecords = ranks.flatMap((child, i): PeakRecord[] =>
    peaks.has(child.pid!) ? [{ system: 'pytorch-2hosts', role: roles[i]!, pid: child.pid!, peakBytes: peaks.get(child.pid!)!, resetAtStart: false }] : [],
  );
  return { results, peaks: peakRecords };
}
