/**
 * Two "hosts" on one machine, for tests and the benchmark: two network
 * namespaces joined by a veth pair (by default 10.211.0.1/24 and
 * 10.211.0.2/24, addresses that exist only inside them), processes started
 * inside with `ip netns exec`, all removed again by `remove()`. Needs the
 * right to make namespaces (root in CI) and iproute2's `ip`.
 *
 * The namespaces share the kernel, the boot id, the host name and /dev/shm
 * with this process; only the network is theirs. So they separate what two
 * hosts' network separates (loopback, addresses, TCP), not memory.
 *
 * @example
 * ```ts
 * const refused = namespacesRefused();
 * if (!refused) {
 *   const hosts = new TwoHosts();
 *   try {
 *     const server = await hosts.natsServer(0, `listen: ${hosts.addresses[0]}:4222`);
 *   } finally {
 *     hosts.remove();
 *   }
 * }
 * ```
 * @module
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findNatsServer } from '@tensorbus/nats-server';

/** Options of {@link TwoHosts} and {@link namespacesRefused}. */
export interface TwoHostsOptions {
  /** The first three octets of the /24 the two veth ends get (.1 and .2); default '10.211.0'. */
  subnet?: string;
  /** The iproute2 command; default 'ip' (found on PATH). */
  ip?: string;
}

/** Why namespaces cannot be made here, or undefined when they can (tried once, with a namespace removed at once). */
export function namespacesRefused(options: TwoHostsOptions = {}): string | undefined {
  const ip = options.ip ?? 'ip';
  const probe = `tbprobe${process.pid}`;
  try {
    execFileSync(ip, ['netns', 'add', probe], { stdio: 'pipe' });
  } catch (error) {
    const said = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return `cannot make network namespaces here (${ip} netns add: ${said || (error as Error).message})`;
  }
  execFileSync(ip, ['netns', 'del', probe], { stdio: 'pipe' });
  return undefined;
}

/** A process inside a namespace that speaks one JSON line per command. */
export interface NsProcess {
  readonly child: ChildProcess;
  /** Lines printed so far, parsed. */
  readonly lines: unknown[];
  /** Resolves with the first line after those earlier calls took that `match` accepts (already printed, or to come). */
  next<T>(match?: (line: T) => boolean, timeoutMs?: number): Promise<T>;
  /** Sends a command line and resolves with the answer. */
  ask<T>(command: unknown, timeoutMs?: number): Promise<T>;
}

/** Two namespaces joined by a veth pair. */
export class TwoHosts {
  /** The namespaces' names. */
  readonly names: [string, string];
  /** The address of each host on the veth pair. */
  readonly addresses: readonly [string, string];
  /** The veth end inside each host (its network interface). */
  readonly devices: readonly [string, string];
  /** A temporary folder for configuration files, removed with the hosts. */
  readonly dir = mkdtempSync(join(tmpdir(), 'tb-netns-'));
  private readonly children: ChildProcess[] = [];
  private readonly ipCommand: string;

  /** Makes the namespaces and the veth pair; throws (having removed what it made) when it cannot. */
  constructor(options: TwoHostsOptions = {}) {
    const subnet = options.subnet ?? '10.211.0';
    this.addresses = [`${subnet}.1`, `${subnet}.2`];
    this.ipCommand = options.ip ?? 'ip';
    const tag = `${process.pid.toString(36)}${Math.random().toString(36).slice(2, 6)}`;
    this.names = [`tb${tag}a`, `tb${tag}b`];
    const ip = (...args: string[]) => execFileSync(this.ipCommand, args, { stdio: 'pipe' });
    // veth names are at most 15 characters.
    const [va, vb] = [`tv${tag}a`.slice(0, 15), `tv${tag}b`.slice(0, 15)];
    this.devices = [va, vb];
    try {
      ip('netns', 'add', this.names[0]);
      ip('netns', 'add', this.names[1]);
      ip('link', 'add', va, 'type', 'veth', 'peer', 'name', vb);
      ip('link', 'set', va, 'netns', this.names[0]);
      ip('link', 'set', vb, 'netns', this.names[1]);
      for (const [i, dev] of [va, vb].entries()) {
        ip('-n', this.names[i]!, 'addr', 'add', `${this.addresses[i]}/24`, 'dev', dev);
        ip('-n', this.names[i]!, 'link', 'set', dev, 'up');
        ip('-n', this.names[i]!, 'link', 'set', 'lo', 'up');
      }
    } catch (error) {
      // Half made: take down what was (a veth still in this namespace goes with its peer).
      this.remove();
      try {
        ip('link', 'del', va);
      } catch {
        // Not made, or moved into a namespace that is gone.
      }
      throw error;
    }
  }

  /**
   * The command and arguments that run `command` inside host `i`, for
   * callers that spawn it themselves. `ip netns exec` replaces itself with
   * the command, so the process id is the command's.
   */
  wrap(i: 0 | 1, command: string, args: string[]): [string, string[]] {
    return [this.ipCommand, ['netns', 'exec', this.names[i], command, ...args]];
  }

  /** Starts `command` inside host `i`; its output lines are collected (JSON where they parse). */
  spawn(i: 0 | 1, command: string, args: string[]): NsProcess {
    const child = spawn(...this.wrap(i, command, args), { stdio: ['pipe', 'pipe', 'pipe'] });
    this.children.push(child);
    const lines: unknown[] = [];
    /** Lines before this one were taken by an earlier `next`. */
    let cursor = 0;
    const waiting: Array<() => void> = [];
    let text = '';
    const take = (chunk: Buffer) => {
      text += chunk.toString();
      let newline: number;
      while ((newline = text.indexOf('\n')) >= 0) {
        const raw = text.slice(0, newline);
        text = text.slice(newline + 1);
        let line: unknown = raw;
        try {
          line = JSON.parse(raw);
        } catch {
          // A log line.
        }
        lines.push(line);
      }
      for (const wake of [...waiting]) wake();
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    const next = <T>(match: (line: T) => boolean = () => true, timeoutMs = 30_000) =>
      new Promise<T>((resolve, reject) => {
        const said = () => JSON.stringify(lines.filter((line) => typeof line !== 'string' || /error|Error|ready|listen/.test(line)).slice(-12));
        const done = () => {
          clearTimeout(timer);
          waiting.splice(waiting.indexOf(look), 1);
          child.off('exit', exited);
        };
        const look = () => {
          for (let k = cursor; k < lines.length; k++) {
            if (!match(lines[k] as T)) continue;
            cursor = k + 1;
            done();
            resolve(lines[k] as T);
            return;
          }
        };
        const exited = (code: number | null) => {
          done();
          reject(new Error(`${command} in ${this.names[i]} exited (${code}); said: ${said()}`));
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`${command} in ${this.names[i]} said nothing matching within ${timeoutMs} ms; said: ${said()}`));
        }, timeoutMs);
        waiting.push(look);
        child.once('exit', exited);
        look();
      });
    return {
      child,
      lines,
      next,
      ask: <T>(command: unknown, timeoutMs?: number) => {
        const answer = next<T>((line) => typeof line === 'object' && line !== null, timeoutMs);
        child.stdin!.write(`${JSON.stringify(command)}\n`);
        return answer;
      },
    };
  }

  /** A node script inside host `i`. */
  node(i: 0 | 1, script: string, args: string[]): NsProcess {
    return this.spawn(i, process.execPath, [script, ...args]);
  }

  /** A nats-server inside host `i` with `config`; resolves once it says it is ready (and, with `routes`, routed). */
  async natsServer(i: 0 | 1, config: string, routes = 0): Promise<NsProcess> {
    const file = join(this.dir, `nats-${i}-${Date.now()}.conf`);
    writeFileSync(file, config);
    const server = this.spawn(i, findNatsServer()!, ['-c', file]);
    await server.next<string>((line) => typeof line === 'string' && line.includes('Server is ready'));
    const deadline = Date.now() + 30_000;
    const routed = () => server.lines.filter((line) => typeof line === 'string' && line.includes('Route connection created')).length;
    while (routed() < routes) {
      if (Date.now() > deadline) throw new Error(`nats-server in ${this.names[i]} did not route: ${JSON.stringify(server.lines.slice(-10))}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return server;
  }

  /**
   * Adds `ms` of delay to every packet leaving either end of the veth pair
   * (`tc qdisc add dev <veth> root netem delay <ms>ms`, so a round trip gains
   * twice that), as a network between machines has; {@link removeDelay}
   * takes it off. Throws, having added nothing, where the kernel has no
   * netem (CONFIG_NET_SCH_NETEM) or `tc` is missing.
   */
  addDelay(ms: number): void {
    if (!(ms > 0 && ms <= 1000)) throw new RangeError(`a delay of 0-1000 ms, got ${String(ms)}`);
    const added: Array<0 | 1> = [];
    try {
      for (const i of [0, 1] as const) {
        execFileSync(this.ipCommand, ['netns', 'exec', this.names[i], 'tc', 'qdisc', 'add', 'dev', this.devices[i], 'root', 'netem', 'delay', `${ms}ms`], { stdio: 'pipe' });
        added.push(i);
      }
    } catch (error) {
      for (const i of added) this.removeDelayOf(i);
      const said = (error as { stderr?: Buffer }).stderr?.toString().trim();
      throw new Error(`cannot add netem delay on the veth pair (tc: ${said || (error as Error).message})`);
    }
  }

  /** Takes off a delay {@link addDelay} added (nothing when there is none). */
  removeDelay(): void {
    for (const i of [0, 1] as const) this.removeDelayOf(i);
  }

  private removeDelayOf(i: 0 | 1): void {
    try {
      execFileSync(this.ipCommand, ['netns', 'exec', this.names[i], 'tc', 'qdisc', 'del', 'dev', this.devices[i], 'root'], { stdio: 'pipe' });
    } catch {
      // No qdisc of ours there.
    }
  }

  /** Kills every process started here and removes the namespaces (and their veth pair). */
  remove(): void {
    for (const child of this.children) child.kill('SIGKILL');
    for (const name of this.names) {
      try {
        execFileSync(this.ipCommand, ['netns', 'del', name], { stdio: 'pipe' });
      } catch {
        // Already gone.
      }
    }
    rmSync(this.dir, { recursive: true, force: true });
  }
}
