/**
 * Helpers of the distributed autograd tests.
 */
import type { ExecutionContext } from 'ava';
import { tf } from '@tensorbus/core';
import type { RpcAgent } from '../src/index.js';
import { eventually, startGroup, stopAll, type TransportKind } from './helpers.js';

/** Asserts that `actual` equals `expected` elementwise within `tolerance` (and has its shape). */
export async function assertClose(t: ExecutionContext, actual: tf.Tensor | null | undefined, expected: tf.Tensor, message = '', tolerance = 1e-5): Promise<void> {
  if (!actual) {
    t.fail(`${message}: no gradient`);
    return;
  }
  t.deepEqual(actual.shape, expected.shape, `${message}: shape`);
  const [a, e] = await Promise.all([actual.data(), expected.data()]);
  let worst = 0;
  for (let i = 0; i < e.length; i++) worst = Math.max(worst, Math.abs(Number(a[i]) - Number(e[i])));
  t.true(worst <= tolerance, `${message}: differs by ${worst} (actual ${[...a].slice(0, 6)}, expected ${[...e].slice(0, 6)})`);
}

/** Local gradients of `f` with respect to `xs` (tf.grads), disposed by the caller. */
export function localGrads(f: (...xs: tf.Tensor[]) => tf.Tensor, xs: tf.Tensor[]): tf.Tensor[] {
  return tf.grads(f)(xs);
}

/** A trainable variable with deterministic values (its initial tensor is disposed: only the variable is the caller's). */
export function variable(shape: number[], seed: number): tf.Variable {
  return tf.tidy(() => tf.variable(tf.randomUniform(shape, -1, 1, 'float32', seed)));
}

/** A group of agents, shut down when the test ends (passed or not). */
export async function group(tt: ExecutionContext, kind: TransportKind, names: string[]): Promise<RpcAgent[]> {
  const agents = await startGroup(kind, names);
  tt.teardown(() => stopAll(agents));
  return agents;
}

/** Every agent of the group holds no context any more. */
export async function allReleased(agents: RpcAgent[]): Promise<void> {
  await eventually(() => agents.every((a) => a.distAutograd.size === 0), 5_000);
}
