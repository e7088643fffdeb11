/**
 * Test helpers of the dashboard: groups of agents over one transport kind and
 * polling (shared with the actors' tests: `@tensorbus/actors/testing`), and
 * worker processes on the shared nats-server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import { eventually, newGroup, stopAll } from '@tensorbus/actors/testing';
import { natsTransport } from '@tensorbus/nats-transport';
import { sharedNatsServer, transportKinds, type TransportKind } from '@tensorbus/nats-transport/testing';

export { transportKinds, type TransportKind };
export { eventually, newGroup, stopAll };

let groups = 0;

/** A static group: `p0` in the test process, `p1..p(size-1)` as OS processes of `script`, on the shared nats-server. */
export interface ProcessGroup {
  agent: RpcAgent;
  children: ChildProcess[];
  serverUrl: string;
  namespace: string;
}

const running = new Set<ProcessGroup>();

/** Starts `size - 1` processes of `script` (fixtures/worker.js) and joins them as `p0`. */
export async function startProcessGroup(script: string, size: number): Promise<ProcessGroup> {
  const server = await sharedNatsServer();
  const namespace = `dmp${process.pid}x${++groups}`;
  const timing = { heartbeatMs: 250, failureTimeoutMs: 3_000 };
  const children = Array.from({ length: size - 1 }, (_, i) => {
    const name = `p${i + 1}`;
    const child = spawn(process.execPath, [script], {
      env: { ...process.env, TENSORBUS_QUIET: '1', NATS_URL: server.url, TENSORBUS_NAMESPACE: namespace, TENSORBUS_WORLD_SIZE: String(size), TENSORBUS_NAME: name, TENSORBUS_RANK: String(i + 1) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${name}] ${d}`));
    return child;
  });
  const agent = await initRpc({ name: 'p0', rank: 0, worldSize: size, ...timing, transport: natsTransport({ servers: server.url, namespace }) });
  const group = { agent, children, serverUrl: server.url, namespace };
  running.add(group);
  return group;
}

/** Kills the worker processes and stops the p0 agents of the groups still up (a failed test skips its cleanup). */
export async function stopProcessGroups(): Promise<void> {
  const groups = [...running];
  running.clear();
  for (const { children } of groups) for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(groups.map(({ agent }) => agent.shutdown({ graceful: false }).catch(() => undefined)));
}
