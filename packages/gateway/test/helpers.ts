/**
 * Test helpers of the gateway: transport kinds, polling, and RRef counts.
 */
import { transportKinds, type TransportKind } from '@tensorbus/nats-transport/testing';
import type { RpcAgent } from '@tensorbus/actors';

export { transportKinds, type TransportKind };

/** The `tensorbus` command of `@tensorbus/actors` (which loads `@tensorbus/gateway/cli`). */
export const TENSORBUS_CLI = new URL('./cli/main.js', import.meta.resolve('@tensorbus/actors'));

/** Resolves once `predicate` holds, polling; rejects after `timeoutMs`. */
export async function eventually(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Every RRef count of `rrefStats()` at zero. */
export const NO_RREFS = Object.freeze({ owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 });

/** Resolves once `rrefStats()` is all zeros on every agent, polling for at most `timeoutMs` (never collecting garbage). */
export async function rrefsReleased(agents: RpcAgent[], timeoutMs = 10_000): Promise<void> {
  const zero = JSON.stringify(NO_RREFS);
  await eventually(() => agents.every((a) => JSON.stringify(a.rrefStats()) === zero), timeoutMs).catch((error: Error) => {
    throw new Error(`${error.message}: ${agents.map((a) => `${a.self.name} ${JSON.stringify(a.rrefStats())}`).join('; ')}`);
  });
}
