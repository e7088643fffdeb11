/**
 * Starts a static group for multi-process tests: `p0` in the test process,
 * `p1..p(size-1)` as real OS processes running a worker fixture, on the
 * shared nats-server, in a fresh namespace.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { natsTransport, type NatsTransportOptions } from '@tensorbus/nats-transport';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { initRpc, type RpcAgent } from '../src/index.js';

/** Heartbeat period and failure timeout of a group, ms. */
export interface Timing {
  heartbeatMs: number;
  failureTimeoutMs: number;
}

/** Failure detection: `relaxed` leaves slack for a loaded 2-core machine, `fast` is for tests of failures. */
export const TIMING: Readonly<Record<'relaxed' | 'fast', Timing>> = {
  relaxed: { heartbeatMs: 250, failureTimeoutMs: 3_000 },
  fast: { heartbeatMs: 200, failureTimeoutMs: 1_000 },
};

/** A group of processes. */
export interface ProcessGroup {
  agent: RpcAgent;
  children: ChildProcess[];
  serverUrl: string;
  namespace: string;
}

let namespaces = 0;

/** Starts one worker process with the group's environment. */
export function startWorkerProcess(script: string, env: Record<string, string>, args: string[] = []): ChildProcess {
  const child = spawn(process.execPath, ['--expose-gc', script, ...args], {
    env: { ...process.env, TENSORBUS_QUIET: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${env.TENSORBUS_NAME}] ${d}`));
  return child;
}

/**
 * Starts `size - 1` processes of `script` and joins them as `p0`; resolves once the group is complete.
 * `callerOptions` go to p0's transport (e.g. `direct: false`), `workerArgs` to the worker processes.
 */
export async function startProcessGroup(
  script: string,
  size: number,
  timing: Timing = TIMING.relaxed,
  callerOptions: Partial<NatsTransportOptions> = {},
  workerArgs: string[] = [],
): Promise<ProcessGroup> {
  const server = await sharedNatsServer();
  const namespace = `mp${process.pid}x${++namespaces}`;
  const env = { NATS_URL: server.url, TENSORBUS_NAMESPACE: namespace, TENSORBUS_WORLD_SIZE: String(size) };
  const args = ['--heartbeat', String(timing.heartbeatMs), '--failure', String(timing.failureTimeoutMs), ...workerArgs];
  const children = Array.from({ length: size - 1 }, (_, i) =>
    startWorkerProcess(script, { ...env, TENSORBUS_NAME: `p${i + 1}`, TENSORBUS_RANK: String(i + 1) }, args),
  );
  const agent = await initRpc({ name: 'p0', rank: 0, worldSize: size, ...timing, transport: natsTransport({ ...callerOptions, servers: server.url, namespace }) });
  const group = { agent, children, serverUrl: server.url, namespace };
  running.add(group);
  return group;
}

/** Every group started by this test file (their agents and processes keep the file's process alive). */
const running = new Set<ProcessGroup>();

/**
 * Stops what process groups are still up when a test file ends (a failed test
 * skips its own cleanup): kills their worker processes and stops their p0
 * agents, so that the file's process can exit and the run goes on.
 */
export async function stopProcessGroups(): Promise<void> {
  const groups = [...running];
  running.clear();
  for (const { children } of groups) for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(groups.map(({ agent }) => agent.shutdown({ graceful: false }).catch(() => undefined)));
}
