/**
 * `initRpc` [init_rpc] and `currentAgent`.
 * @module
 */
import { InvalidArgumentError, ShutdownError } from '@tensorbus/core';
import { callScope } from './agent/host.js';
import { resolveOptions, type InitRpcOptions } from './agent/options.js';
import type { AnyPlugin } from './agent/agent-host.js';
import { agentOf, RpcAgent } from './agent/rpc-agent.js';
import { watchLauncher } from './cli/launcher-watch.js';
import { reportToLauncher } from './cli/launcher-report.js';

const running = new Set<RpcAgent>();

/**
 * Starts a worker: connects its transport, claims its name, joins the group
 * and, in a static group (`worldSize`), resolves once all have joined.
 *
 * @example
 * ```ts
 * const agent = await initRpc({ name: 'trainer0', transport: natsTransport({ servers: url }), worldSize: 3, rank: 0 });
 * ```
 */
export function initRpc(options: InitRpcOptions = {}): Promise<RpcAgent> {
  return startAgent(options, []);
}

/** @internal `initRpc` with protocol plugins of its own installed after the built-in ones (tests, tools). */
export async function startAgent(options: InitRpcOptions, plugins: readonly AnyPlugin[]): Promise<RpcAgent> {
  let resolved: ReturnType<typeof resolveOptions>;
  try {
    resolved = resolveOptions(options);
  } catch (error) {
    // The agent owns the transport it was given: a refused start closes it.
    if (options.transport) void Promise.resolve(options.transport).then((t) => t.close(), () => undefined);
    throw error;
  }
  const transport = await resolved.transport;
  const agent = new RpcAgent(transport, resolved, plugins);
  try {
    await agent.start();
  } catch (error) {
    await agent.shutdown({ graceful: false }).catch(() => undefined);
    throw error;
  }
  running.add(agent);
  watchLauncher();
  reportToLauncher(agent);
  agent.whenStopped(() => running.delete(agent));
  return agent;
}

/**
 * The agent running the current remote call; outside any call, the process's
 * agent when exactly one is running.
 * @throws ShutdownError when no agent is running.
 */
export function currentAgent(): RpcAgent {
  const scope = callScope.getStore();
  const serving = scope === undefined ? undefined : agentOf(scope.host);
  if (serving !== undefined) return serving;
  if (running.size === 1) return running.values().next().value as RpcAgent;
  if (running.size === 0) throw new ShutdownError('no RPC agent is running: call initRpc() first');
  throw new InvalidArgumentError(
    `${running.size} RPC agents run in this process: call currentAgent() inside a remote call, or use the agent initRpc() returned`,
  );
}
