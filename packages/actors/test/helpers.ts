/**
 * Test helpers: groups of agents over one transport kind (the ones other
 * packages' tests share too are in src/testing, `@tensorbus/actors/testing`).
 */
import type { ExecutionContext } from 'ava';
import type { Tensor } from '@tensorflow/tfjs';
import { tf } from '@tensorbus/core';
import { transportKind, transportKinds, type TransportKind } from '@tensorbus/nats-transport/testing';
import { initRpc, type InitRpcOptions, type RpcAgent } from '../src/index.js';
import { eventually, newGroup, stopAll } from '../src/testing/index.js';
import { CallAuth } from '../src/agent/call-auth.js';
import { CallClient } from '../src/agent/call-client.js';
import { Identity } from '../src/agent/identity.js';

export { transportKind, transportKinds, type TransportKind };
export { eventually, newGroup, stopAll };

const started = new Set<RpcAgent>();

/** Stops every agent the helpers started (register with `test.after.always(stopEverything)`). */
export async function stopEverything(): Promise<void> {
  await stopAll([...started]);
  started.clear();
}

/** Starts agents named `names` in one fresh group (dynamic unless worldSize is given). */
export async function startGroup(kind: TransportKind, names: string[], options: Partial<InitRpcOptions> = {}): Promise<RpcAgent[]> {
  const group = newGroup(kind);
  const agents = await Promise.all(
    names.map((name, rank) =>
      initRpc({
        name,
        transport: group.transport(),
        ...(options.worldSize !== undefined ? { rank } : {}),
        heartbeatMs: 100,
        failureTimeoutMs: 600,
        ...options,
      }),
    ),
  );
  for (const agent of agents) started.add(agent);
  return agents;
}

/**
 * `names` in a fresh group, and `outsider`: a raw caller there that is not a
 * member (what another account's client is). Stopped when the test ends.
 */
export async function groupWithOutsider(tt: ExecutionContext, kind: TransportKind, names: string[]): Promise<{ agents: RpcAgent[]; outsider: CallClient }> {
  const { transport } = newGroup(kind);
  const agents = await Promise.all(names.map((name) => initRpc({ name, transport: transport(), heartbeatMs: 100, failureTimeoutMs: 1_500 })));
  const raw = await transport();
  tt.teardown(async () => {
    await stopAll(agents);
    await raw.close().catch(() => undefined);
  });
  await eventually(() => agents.every((agent) => agent.workers().length === names.length));
  return { agents, outsider: new CallClient(raw, 'outsider', undefined, () => 5_000, new CallAuth(new Identity(), 'outsider', () => undefined)) };
}

/** A float32 tensor of `n` values that differ from place to place (and from seed to seed). */
export function patternTensor(n: number, seed: number): Tensor {
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) values[i] = ((i * 7919 + seed) % 100_003) / 7;
  return tf.tensor1d(values);
}

/** The raw bytes of a tensor's values. */
export function bytesOf(tensor: Tensor): Buffer {
  const values = tensor.dataSync() as Float32Array;
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}

/** Every RRef count of `rrefStats()` at zero. */
export const NO_RREFS = Object.freeze({ owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 });

/**
 * Resolves once `rrefStats()` is all zeros on every agent, polling for at
 * most `timeoutMs`. Never collects garbage: lifetimes must not depend on it.
 */
export async function rrefsReleased(agents: RpcAgent[], timeoutMs = 10_000): Promise<void> {
  const zero = JSON.stringify(NO_RREFS);
  await eventually(() => agents.every((a) => JSON.stringify(a.rrefStats()) === zero), timeoutMs).catch((error: Error) => {
    throw new Error(`${error.message}: ${agents.map((a) => `${a.self.name} ${JSON.stringify(a.rrefStats())}`).join('; ')}`);
  });
}
