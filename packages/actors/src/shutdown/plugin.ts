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
import { SHUTDOWN_ASKED, SHUTDOWN_CONTROL_KINDS, SHUTDOWN_STATUS } from './shutdown-protocol.js';
import { writeErrorLine } from '../platform/process.js';

/** One worker's side of graceful shutdown. */
export class GracefulShutdown implements PluginLifecycle {
  private requested = false;
  /**
   * While this worker is in the static barrier: the members that told it they
   * asked to shut down (SHUTDOWN_ASKED, MAC-shown senders that are members),
   * not yet taken by a pause; undefined otherwise (a note then is dropped).
   */
  private askedToLeave: Set<string> | undefined;
  /** Ends the barrier's current pause early when it waits for a member that told it asked. */
  private wake: (() => void) | undefined;

  constructor(private readonly host: AgentHost) {
    host.onControl(SHUTDOWN_STATUS, (m) => signStatus({ name: host.name, sign: (text) => host.members.sign(text) }, m, this.status()));
    host.onControl(SHUTDOWN_ASKED, (_m, sender) => {
      if (!this.askedToLeave || !sender?.verified || host.members.get(sender.name) === undefined) return;
      this.askedToLeave.add(sender.name);
      this.wake?.();
    });
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
        this.askedToLeave = new Set();
        this.tellAsked(waitedFor);
        await staticBarrier(
          {
            name: host.name,
            request: (worker, message, ms) => host.requestControl(worker, message, ms),
            status: () => this.status(),
            liveMembers: () => host.members.list().map((w) => w.name),
            verify: (from, text, signature) => host.members.verifyFrom(from, text, signature),
            pauseForAsk: (ms, waitingOn) => this.pauseForAsk(ms, waitingOn),
          },
          timeoutMs,
        );
      } else if (!(await this.drainOwnCalls(timeoutMs))) {
        failure = new RpcTimeoutError(`graceful shutdown of '${host.name}' timed out after ${timeoutMs} ms with ${this.host.callCounts.outstanding} call(s) outstanding`);
      }
    } catch (error) {
      failure = error;
    } finally {
      this.askedToLeave = undefined;
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

  /** Tells every other member this worker asked to shut down (a lost note only delays a waiting member's next round). */
  private tellAsked(members: string[]): void {
    for (const name of members) {
      if (name === this.host.name) continue;
      try {
        this.host.sendControl(name, { k: SHUTDOWN_ASKED });
      } catch {
        // The member may be leaving; its status round finds out.
      }
    }
  }

  /**
   * Waits `ms`, or until one of `waitingOn` has told it asked; the note is
   * taken, so each buys one early round.
   */
  private pauseForAsk(ms: number, waitingOn: string[]): Promise<void> {
    return new Promise((resolve) => {
      const check = () => {
        const asked = waitingOn.filter((name) => this.askedToLeave?.delete(name));
        if (asked.length === 0) return;
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = check;
      check();
    });
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
