/**
 * The batch-update parameter server of PyTorch's batch-RPC tutorial: each
 * trainer pushes its gradients and waits; when all N have arrived, the server
 * averages them, applies one optimizer step and answers all N with the new
 * parameters [@rpc.functions.async_execution]. The waiting happens in an async
 * function, so the server keeps serving the other trainers meanwhile.
 *
 * Each push names the step it was computed for; a push for another step (a
 * trainer that has not seen `ps` restart from a checkpoint) is refused, and
 * the trainer fetches the server's state (`fetchState`) and carries on from
 * its step.
 * @module
 */
import { tf } from '@tensorbus/core';
import { InvalidArgumentError } from '@tensorbus/core';
import { remoteFunction } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';
import { createParams } from './model.js';

type Tensor = TfNamespace.Tensor;

/** What the server does after each optimizer step, before it answers the round (a checkpoint). */
export type StepListener = (step: number) => void | Promise<void>;

/** The server's state: parameters, an optimizer, and the round being gathered. */
export class BatchUpdateParameterServer {
  readonly params: TfNamespace.Variable[];
  readonly optimizer: TfNamespace.Optimizer;
  private sums: Tensor[] | undefined;
  private arrived = 0;
  private waiting: Array<() => void> = [];
  step = 0;

  constructor(readonly trainers: number, learningRate: number, private readonly onStep: StepListener = () => undefined) {
    this.params = createParams(4, 16, 3);
    this.optimizer = tf.train.adam(learningRate);
  }

  /** Adds one trainer's gradients for `step`; resolves with the parameters after the round's update. */
  async pushAndWait(step: number, grads: Tensor[]): Promise<TfNamespace.Variable[]> {
    if (step !== this.step) throw new InvalidArgumentError(`gradients for step ${step}, but the server is at step ${this.step}`);
    const previous = this.sums;
    this.sums = previous ? previous.map((s, i) => tf.add(s, grads[i]!)) : grads.map((g) => g.clone());
    previous?.forEach((t) => t.dispose());
    const updated = new Promise<void>((resolve) => this.waiting.push(resolve));
    if (++this.arrived === this.trainers) void this.apply();
    await updated;
    return this.params;
  }

  private async apply(): Promise<void> {
    const sums = this.sums!;
    tf.tidy(() => {
      const named = this.params.map((v, i) => ({ name: v.name, tensor: tf.div(sums[i]!, this.trainers) }));
      this.optimizer.applyGradients(named);
    });
    sums.forEach((t) => t.dispose());
    this.sums = undefined;
    this.arrived = 0;
    this.step++;
    await this.onStep(this.step);
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

let host!: (server: BatchUpdateParameterServer) => void;
/** This process's parameter server, once hosted. Calls that arrive earlier (a trainer can be faster than `ps`) wait for it. */
const hosted = new Promise<BatchUpdateParameterServer>((resolve) => (host = resolve));

/** Serves `server` as this process's parameter server (on the `ps` worker), once it is ready (restored). */
export function hostParameterServer(server: BatchUpdateParameterServer): void {
  host(server);
}

/** The current step and parameters. */
export const fetchState = remoteFunction('ps.fetchState', async () => {
  const server = await hosted;
  return { step: server.step, params: server.params };
});

/** Pushes gradients computed for `step`, waits for the round, returns the updated parameters. */
export const pushGradients = remoteFunction('ps.pushGradients', async (step: number, grads: Tensor[]) => (await hosted).pushAndWait(step, grads));
