/**
 * The shutdown plugin: graceful shutdown [shutdown(graceful=True)]. A static
 * group waits for quiescence across every live worker (barrier.ts); a dynamic
 * worker drains its own calls. Either way failure detection, not a clock,
 * ends waits on dead peers.
 * @module
 */
import { RpcTimeoutError } from '@tensorbus/core';
import { PluginKey, type AgentHost, type PluginLifecycle, type ProtocolPlugin } from '../agent/host.js';
import { signStatus, staticBarrier, type ShutdownStatus } from './barrier.js';
import { SHUTDOWN_CONTROL_KINDS, SHUTDOWN_STATUS } from './shutdown-protocol.js';
import { writeErrorLine } from '../platform/process.js';

/** One worker's side of graceful shutdown. */
export class GracefulShutdown implements PluginLifecycle {
  private requested = false;

  constructor(private readonly host: AgentHost) {
    host.onControl(SHUTDOWN_STATUS, (m) => signStatus({ name: host.name, sign: (text) => host.members.sign(text) }, m, this.status()));
  }

  /**
   * Waits until this worker may leave (see the module): resolves with the
   * failure to report (an RpcTimeoutError past `timeoutMs`, 0 = no limit), or
   * undefined. Peers declared failed meanwhile are named on stderr.
   */
  async drain(timeoutMs: number): Promise<unknown> {
    this.requested = true;
    const host = this.host;
    const waitedFor = host.members.list().map((w) => w.name);
    let failure: unknown;
    try {
      if (host.options.worldSize !== undefined) {
        await staticBarrier(
          {
            name: host.name,
            request: (worker, message, ms) => host.requestControl(worker, message, ms),
            status: () => this.status(),
            liveMembers: () => host.members.list().map((w) => w.name),
            verify: (from, text, signature) => host.members.verifyFrom(from, text, signature),
          },
          timeoutMs,
        );
      } else if (!(await this.drainOwnCalls(timeoutMs))) {
        failure = new RpcTimeoutError(`graceful shutdown of '${host.name}' timed out after ${timeoutMs} ms with ${this.host.callCounts.outstanding} call(s) outstanding`);
      }
    } catch (error) {
      failure = error;
    }
    const failed = waitedFor.filter((name) => host.members.departure(name) === 'failed');
    if (failed.length > 0) {
      writeErrorLine(`[tensorbus] graceful shutdown of '${host.name}' went on without ${failed.map((n) => `'${n}'`).join(', ')}: declared failed (stopped answering)`);
    }
    return failure;
  }

  /** A worker that stops without draining still tells the barriers of its peers that it asked to. */
  stopping(): void {
    this.requested = true;
  }

  private status(): ShutdownStatus {
    const { busy, sentTo, receivedFrom } = this.host.callCounts;
    return { requested: this.requested, busy, sentTo: { ...sentTo }, receivedFrom: { ...receivedFrom } };
  }

  private async drainOwnCalls(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (this.host.callCounts.outstanding > 0) {
      if (timeoutMs > 0 && Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return true;
  }
}

/** The key of a worker's {@link GracefulShutdown}. */
export const SHUTDOWN = new PluginKey<GracefulShutdown>('shutdown');

/** Graceful shutdown. */
export const shutdownPlugin: ProtocolPlugin<GracefulShutdown> = {
  key: SHUTDOWN,
  kinds: SHUTDOWN_CONTROL_KINDS,
  functions: [],
  install: (host) => new GracefulShutdown(host),
};
