/**
 * The tensorbus cases, run by a caller agent against a callee, through the
 * public API only: rpcSync no-op and identity round trips, rpcAsync calls per
 * second with a window in flight, remote + toHere + release, and one
 * distributed autograd forward+backward through a RemoteModule.
 * @module
 */
import { RpcTimeoutError, tf, TransportError } from '@tensorbus/core';
import { RemoteModule, type RpcAgent } from '@tensorbus/actors';
import { TIMED_OUT, timeCalls, windowRate, type LatencyPlan, type LatencySamples, type RatePlan, type RateRounds } from '../stats.js';
import { BenchLinear, echo, identity, noop, smallValue } from './tensorbus-functions.js';

/** Sizes of the autograd case's model: a batch of 16 rows through a 64 → 32 layer. */
const AUTOGRAD_SHAPE = { batch: 16, inputs: 64, outputs: 32 };

/**
 * How long an identity call may take before it counts as lost. A lost call
 * (no answer in time, or a chunked transfer that failed) counts as infinitely
 * slow in the median and is reported; the case goes on.
 */
export const IDENTITY_TIMEOUT_MS = 60_000;

/** Round trips of `rpcSync` with no arguments (bytes 0) or of the identity on a float32 tensor of `bytes`. */
export async function tensorbusLatency(agent: RpcAgent, callee: string, bytes: number, plan: LatencyPlan): Promise<LatencySamples> {
  if (bytes === 0) return timeCalls(() => agent.rpcSync(callee, noop, []), plan);
  const x = tf.zeros([bytes / 4], 'float32');
  try {
    return await timeCalls(async () => {
      try {
        const y = await agent.rpcSync(callee, identity, [x], { timeoutMs: IDENTITY_TIMEOUT_MS });
        if (y.size !== x.size) throw new Error(`identity returned ${y.size} elements, sent ${x.size}`);
        y.dispose();
        return undefined;
      } catch (error) {
        if (!(error instanceof RpcTimeoutError || error instanceof TransportError)) throw error;
        console.error(`identity of ${bytes} bytes: ${error.message}`);
        return TIMED_OUT;
      }
    }, plan);
  } finally {
    x.dispose();
  }
}

/** Small `rpcAsync` calls per second, `plan.window` in flight. */
export function tensorbusAsyncRate(agent: RpcAgent, callee: string, plan: RatePlan): Promise<RateRounds> {
  return windowRate((i) => agent.rpcAsync(callee, echo, [i]).wait(), plan);
}

/** `remote` (a 16-element tensor owned by the callee) + `toHere` + `release`, one after another, per second. */
export function tensorbusRrefRate(agent: RpcAgent, callee: string, plan: RatePlan): Promise<RateRounds> {
  return windowRate(async () => {
    const ref = agent.remote(callee, smallValue, []);
    const value = await ref.toHere();
    value.dispose();
    await ref.release();
  }, plan);
}

/** The autograd case's model on the callee and its input batch, kept from block to block. */
interface AutogradModel {
  module: RemoteModule<InstanceType<typeof BenchLinear>>;
  x: tf.Tensor;
}
let autogradModel: Promise<AutogradModel> | undefined;

/**
 * One distributed autograd step through a remote linear layer, per repetition:
 * open a context, forward on the callee, a local loss, backward across both,
 * read the gradients, release the context everywhere. The model is made by
 * the first block and used by every block, as the PyTorch script uses one
 * `RemoteModule` for all its steps; the `last` block frees it (its weights on
 * the callee, the input batch here), so the leak check finds nothing left.
 */
export async function tensorbusAutograd(agent: RpcAgent, callee: string, plan: LatencyPlan, last = true): Promise<LatencySamples> {
  const { batch, inputs, outputs } = AUTOGRAD_SHAPE;
  autogradModel ??= RemoteModule.create(agent, callee, BenchLinear, [inputs, outputs]).then(
    (module) => ({ module, x: tf.randomNormal([batch, inputs], 0, 1, 'float32', 3) }),
    (error: unknown) => {
      // A block that could not make the model fails; the next one tries again.
      autogradModel = undefined;
      throw error;
    },
  );
  const { module, x } = await autogradModel;
  try {
    return await timeCalls(
      () =>
        agent.distAutograd.context(async (ctx) => {
          const h = await module.forward(x);
          const squared = tf.square(h);
          const loss = tf.mean(squared);
          await agent.distAutograd.backward(ctx, [loss]);
          agent.distAutograd.getGradients(ctx);
          tf.dispose([h, squared, loss]);
        }),
      plan,
    );
  } finally {
    if (last) {
      autogradModel = undefined;
      x.dispose();
      // Frees the module's weights on the callee and releases it.
      await module.dispose();
    }
  }
}
