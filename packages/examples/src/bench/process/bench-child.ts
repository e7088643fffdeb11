/**
 * The parent side of the benchmark's control channel: starts a Node process
 * of the benchmark, waits until it says it is ready, sends it commands and
 * awaits their answers, and stops it. See child-channel.ts for the protocol.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { PROTOCOL_PREFIX } from './child-channel.js';

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
}

/** Options of {@link BenchChild.start}. */
export interface StartOptions {
  /** Shown in front of the child's own output and in errors. */
  label: string;
  /** Path of the script, relative to the bench folder (`systems/tcp-echo-server.js`). */
  script: string;
  args?: string[];
  env?: Record<string, string>;
  /** How long the child may take to say it is ready, ms (default 60,000). */
  readyTimeoutMs?: number;
  /**
   * Runs the node command through another (e.g. `ip netns exec <name>`): given
   * node and its arguments, returns what to spawn instead. The launcher must
   * replace itself with node, so the process id stays node's.
   */
  launcher?: (command: string, args: string[]) => [string, string[]];
}

/**
 * Extra node flags for every child, from `TENSORBUS_BENCH_NODE_FLAGS`
 * (space-separated), e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile
 * the callers and callees (node refuses --cpu-prof in NODE_OPTIONS).
 */
function nodeFlags(): string[] {
  return (process.env.TENSORBUS_BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** A running child process of the benchmark. */
export class BenchChild {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private exited = false;

  private constructor(
    readonly label: string,
    private readonly child: ChildProcess,
    /** What the child announced when ready (ports and such). */
    readonly info: Record<string, unknown>,
  ) {}

  /** The child's process id. */
  get pid(): number {
    return this.child.pid!;
  }

  /** Starts `script` with `node` and resolves once it is ready. */
  static start(options: StartOptions): Promise<BenchChild> {
    const script = fileURLToPath(new URL(`../${options.script}`, import.meta.url));
    const launch = options.launcher ?? ((command: string, args: string[]): [string, string[]] => [command, args]);
    const child = spawn(...launch(process.execPath, ['--expose-gc', ...nodeFlags(), script, ...(options.args ?? [])]), {
      env: { ...process.env, TENSORBUS_QUIET: '1', ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    live.add(child);
    return new Promise((resolve, reject) => {
      let instance: BenchChild | undefined;
      let stderrTail = '';
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`${options.label} was not ready within ${options.readyTimeoutMs ?? 60_000} ms: ${stderrTail}`));
      }, options.readyTimeoutMs ?? 60_000);
      createInterface({ input: child.stdout! }).on('line', (line) => {
        if (!line.startsWith(PROTOCOL_PREFIX)) {
          console.log(`  [${options.label}] ${line}`);
          return;
        }
        const message = JSON.parse(line.slice(PROTOCOL_PREFIX.length)) as { ready?: boolean; info?: Record<string, unknown>; id?: number; result?: unknown; error?: string };
        if (message.ready) {
          clearTimeout(timer);
          instance = new BenchChild(options.label, child, message.info ?? {});
          resolve(instance);
          return;
        }
        instance?.settle(message.id!, message.result, message.error);
      });
      child.stderr!.on('data', (chunk: Buffer) => {
        stderrTail = (stderrTail + chunk.toString()).slice(-2_000);
        process.stderr.write(`  [${options.label}] ${chunk.toString()}`);
      });
      child.on('exit', (code, signal) => {
        live.delete(child);
        clearTimeout(timer);
        const error = new Error(`${options.label} exited (${signal ?? code}) ${stderrTail.trim().split('\n').slice(-3).join(' | ')}`);
        if (!instance) reject(error);
        else instance.fail(error);
      });
    });
  }

  /** Sends a command and resolves with the child's answer. */
  request<T>(op: string, params: Record<string, unknown> = {}): Promise<T> {
    if (this.exited) return Promise.reject(new Error(`${this.label} is not running`));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.child.stdin!.write(`${JSON.stringify({ id, op, params })}\n`);
    });
  }

  /** Asks the child to exit; kills it when it has not within `timeoutMs`. */
  async stop(timeoutMs = 15_000): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.request('exit').catch(() => undefined);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await gone;
    clearTimeout(timer);
  }

  private settle(id: number, result: unknown, error: string | undefined): void {
    const pending = this.pending.get(id);
    if (!pending) return;
    this.pending.delete(id);
    if (error !== undefined) pending.reject(new Error(`${this.label}: ${error}`));
    else pending.resolve(result);
  }

  private fail(error: Error): void {
    this.exited = true;
    for (const pending of this.pending.values()) pending.reject(error);
    this.pending.clear();
  }
}
