/**
 * The parameter server's checkpoints (`--checkpoint-every K`): every K epochs
 * `ps` saves its step, its curve so far, its parameters and its optimizer's
 * state to JetStream (`checkpointStore`) before it answers the round, so a
 * restarted `ps` (`tensorbus launch --max-restarts`) carries on from there,
 * losing at most K epochs of updates. A checkpoint that is refused (truncated,
 * of another shape, another launch's) is said and ignored: `ps` starts fresh.
 * @module
 */
import { CheckpointError, tf } from '@tensorbus/core';
import { checkpointStore, type CheckpointStore } from '@tensorbus/nats-transport';
import type { BatchUpdateParameterServer } from './server.js';

/** One point of the learning curve. */
export interface CurvePoint {
  epoch: number;
  trainLoss: number;
  testLoss: number;
  testAccuracy: number;
}

const KEY = 'parameter-server';

/** The checkpoints of one run's `ps`. */
export class ParameterServerCheckpoints {
  private constructor(private readonly store: CheckpointStore) {}

  /** Opens the store of the bus in `NATS_URL` (with JetStream, as `tensorbus launch` starts it). */
  static async open(): Promise<ParameterServerCheckpoints> {
    return new ParameterServerCheckpoints(await checkpointStore({ servers: process.env.NATS_URL }));
  }

  /** Saves `server`'s state and the curve so far. */
  async save(server: BatchUpdateParameterServer, curve: CurvePoint[]): Promise<void> {
    const optimizer = await server.optimizer.getWeights();
    const entries: Record<string, unknown> = { step: server.step, curve, optimizer: optimizer.map((w) => w.name) };
    server.params.forEach((p, i) => (entries[`param${i}`] = p));
    optimizer.forEach((w, i) => (entries[`opt${i}`] = w.tensor));
    try {
      await this.store.save(KEY, entries);
    } finally {
      // getWeights makes the iteration count a new scalar; the moments are the optimizer's own variables.
      optimizer[0]?.tensor.dispose();
    }
  }

  /**
   * Restores `server` from the last checkpoint; resolves with its curve, or
   * undefined (and says why) when there is none or it is refused.
   */
  async restore(server: BatchUpdateParameterServer): Promise<CurvePoint[] | undefined> {
    const expect = Object.fromEntries(server.params.map((p, i) => [`param${i}`, { shape: p.shape, dtype: 'float32' as const }]));
    let saved: Record<string, unknown> | undefined;
    try {
      saved = await this.store.load(KEY, expect);
    } catch (error) {
      if (!(error instanceof CheckpointError)) throw error;
      console.log(`${error.message}: starting fresh`);
      return undefined;
    }
    if (saved === undefined) {
      console.log('no checkpoint yet: starting fresh');
      return undefined;
    }
    const names = saved.optimizer as string[];
    server.params.forEach((p, i) => p.assign(saved[`param${i}`] as tf.Tensor));
    await server.optimizer.setWeights(names.map((name, i) => ({ name, tensor: saved[`opt${i}`] as tf.Tensor })));
    server.step = saved.step as number;
    for (const value of Object.values(saved)) if (value instanceof tf.Tensor) value.dispose();
    return saved.curve as CurvePoint[];
  }

  /** Closes the store's connection. */
  async close(): Promise<void> {
    await this.store.close();
  }

  /** Removes an earlier run's checkpoint (a first start never restores one). */
  async clear(): Promise<void> {
    await this.store.delete(KEY);
  }
}
