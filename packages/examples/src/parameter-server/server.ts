/**
 * The batch-update parameter server of PyTorch's batch-RPC tutorial: each
 * trainer pushes its gradients and waits; when all N have arrived, the server
 * averages them, applies one optimizer step and answers all N with the new
 * parameters [@rpc.functions.async_execution]. The waiting happens in an async
 * function, so the server keeps serving the other trainers meanwhile.
 * @module
 */
import { tf } from '@tensorbus/core';
import { remoteFunction } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';
import { createParams } from './model.js';

type Tensor = TfNamespace.Tensor;

/** What the server reports after each optimizer step. */
export type StepListener = (step: number) => void;

/** The server's state: parameters, an optimizer, and the round being gathered. */
export class BatchUpdateParameterServer {
  readonly params: TfNamespace.Variable[];
  private readonly optimizer: TfNamespace.Optimizer;
  private sums: Tensor[] | undefined;
  private arrived = 0;
  private waiting: Array<() => void> = [];
  step = 0;

  constructor(readonly trainers: number, learningRate: number, private readonly onStep: StepListener = () => undefined) {
    this.params = createParams(4, 16, 3);
    this.optimizer = tf.train.adam(learningRate);
  }

  /** Adds one trainer's gradients; resolves with the parameters after the round's update. */
  async pushAndWait(grads: Tensor[]): Promise<TfNamespace.Variable[]> {
    const previous = this.sums;
    this.sums = previous ? previous.map((s, i) => tf.add(s, grads[i]!)) : grads.map((g) => g.clone());
    previous?.forEach((t) => t.dispose());
    const updated = new Promise<void>((resolve) => this.waiting.push(resolve));
    if (++this.arrived === this.trainers) this.apply();
    await updated;
    return this.params;
  }

  private apply(): void {
    const sums = this.sums!;
    tf.tidy(() => {
      const named = this.params.map((v, i) => ({ name: v.name, tensor: tf.div(sums[i]!, this.trainers) }));
      this.optimizer.applyGradients(named);
    });
    sums.forEach((t) => t.dispose());
    this.sums = undefined;
    this.arrived = 0;
    this.step++;
    this.onStep(this.step);
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

let host!: (server: BatchUpdateParameterServer) => void;
/** This process's parameter server, once hosted. Calls that arrive earlier (a trainer can be faster than `ps`) wait for it. */
const hosted = new Promise<BatchUpdateParameterServer>((resolve) => (host = resolve));

/** Makes this process's parameter server (on the `ps` worker). */
export function hostParameterServer(trainers: number, learningRate: number, onStep: StepListener): BatchUpdateParameterServer {
  const server = new BatchUpdateParameterServer(trainers, learningRate, onStep);
  host(server);
  return server;
}

/** The current parameters. */
export const fetchParams = remoteFunction('ps.fetchParams', async () => (await hosted).params);

/** Pushes gradients, waits for the round, returns the updated parameters. */
export const pushGradients = remoteFunction('ps.pushGradients', async (grads: Tensor[]) => (await hosted).pushAndWait(grads));
