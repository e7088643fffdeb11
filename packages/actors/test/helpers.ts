/**
 * Test helpers: groups of agents over one transport kind.
 */
import type { Tensor } from '@tensorflow/tfjs';
import { tf, type Transport } from '@tensorbus/core';
import { transportKind, transportKinds, type TransportKind } from '@tensorbus/nats-transport/testing';
import { initRpc, type InitRpcOptions, type RpcAgent } from '../src/index.js';

export { transportKind, transportKinds, type TransportKind };

let groups = 0;
const started = new Set<RpcAgent>();

/** Stops every agent the helpers started (register with `test.after.always(stopEverything)`). */
export async function stopEverything(): Promise<void> {
  await stopAll([...started]);
  started.clear();
}

/** A fresh namespace on `kind`: agents made with it see each other and nobody else. */
export function newGroup(kind: TransportKind): { transport: () => Promise<Transport>; namespace: string } {
  const namespace = `g${process.pid}x${++groups}`;
  return { namespace, transport: () => kind.create({ namespace }) };
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

/** Shuts every agent down without waiting. */
export async function stopAll(agents: RpcAgent[]): Promise<void> {
  await Promise.all(agents.map((a) => a.shutdown({ graceful: false }).catch(() => undefined)));
}

/** Resolves once `predicate` holds, polling; rejects after `timeoutMs`. */
export async function eventually(predicate: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
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
