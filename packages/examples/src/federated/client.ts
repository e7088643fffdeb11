/**
 * A federated client: joins the aggregation server, then each round pulls
 * the global model, trains it a few local epochs on its own (label-skewed)
 * data and submits the weights with its sample count. Its data never leaves
 * the client; only weights cross the account boundary. Platform-free: a Node
 * worker process and a browser tab run this same loop.
 * @module
 */
import { tf } from '@tensorbus/core';
import type { RpcAgent } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';
import { seededRandom, shuffled } from '../common/random.js';
import type { Split } from '../parameter-server/data.js';
import { evaluate, gradients } from '../parameter-server/model.js';
import { SERVER_NAME } from './names.js';
import { getGlobal, join, submitUpdate, type ClientId, type JoinAnswer } from './protocol.js';
import type { GlobalModel } from './rounds.js';

type Tensor = TfNamespace.Tensor;

/**
 * How long one call for round 1 may wait for it to open (for all clients to
 * join, tabs opened by hand among them); asked again after. The server holds
 * a timed-out call until the round opens and a few calls per client at most.
 */
const FIRST_ROUND_WAIT_MS = 300_000;

/** How a client trains. */
export interface ClientSettings {
  localEpochs: number;
  batchSize: number;
  learningRate: number;
  seed: number;
  /** Rounds this client sits out silently. */
  skip: ReadonlySet<number>;
}

/** What a client saw in one round, for a page or a log to show. */
export interface ClientRound {
  round: number;
  rounds: number;
  /** Held-out accuracy of the global model the round started from (after the previous round). */
  globalAccuracy: number;
  /** Loss and accuracy of the locally trained weights on the client's own data. */
  localLoss: number;
  localAccuracy: number;
  /** False when the update came after the round had closed. */
  accepted: boolean;
}

/** Optional observers of {@link runClient}. */
export interface ClientHooks {
  /** Called before training `round` (a Node worker's `--crash` kills itself here). */
  beforeRound?(round: number): void;
  /** Called after each submission, with the round's numbers measured on `heldOut` (when given). */
  onRound?(progress: ClientRound): void;
  /** Called once the last round closed, with the final global model's held-out accuracy (when `heldOut` is given). */
  onDone?(globalAccuracy: number): void;
  /** Held-out data to measure the global model on, for `onRound` and `onDone`. */
  heldOut?: Split;
}

/** Plain minibatch SGD from `weights` for `epochs` over `data`; returns new tensors. */
function trainLocally(weights: Tensor[], data: Split, settings: ClientSettings, seed: number): Tensor[] {
  const random = seededRandom(seed);
  let params = weights.map((w) => w.clone());
  for (let epoch = 0; epoch < settings.localEpochs; epoch++) {
    const order = shuffled(data.labels.map((_, i) => i), random);
    for (let from = 0; from < order.length; from += settings.batchSize) {
      const rows = order.slice(from, from + settings.batchSize);
      const next = tf.tidy(() => {
        const x = tf.tensor2d(rows.map((r) => data.features[r]!));
        const y = tf.tensor1d(rows.map((r) => data.labels[r]!), 'int32');
        const grads = gradients(params, x, y);
        return params.map((p, i) => tf.sub(p, tf.mul(grads[i]!, settings.learningRate)));
      });
      tf.dispose(params);
      params = next;
    }
  }
  return params;
}

/**
 * Joins the server, retrying while it is not up yet. Through a service
 * import, nats-server 2.9 does not answer "no responders" for an exporter
 * with no subscriber, so an early call times out rather than failing fast.
 */
async function joinServer(agent: RpcAgent, id: ClientId, samples: number, waitMs = 30_000): Promise<JoinAnswer> {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      return await agent.rpcSync(SERVER_NAME, join, [id, samples], { timeoutMs: 2_000 });
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (Date.now() > until || (code !== 'RPC_TIMEOUT' && code !== 'WORKER_UNAVAILABLE')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** The model of round 1, asking again while it has not opened (the other clients are still joining). */
async function firstRound(agent: RpcAgent, id: ClientId): Promise<GlobalModel> {
  for (;;) {
    try {
      return await agent.rpcSync(SERVER_NAME, getGlobal, [id, 1], { timeoutMs: FIRST_ROUND_WAIT_MS });
    } catch (error) {
      if ((error as { code?: string }).code !== 'RPC_TIMEOUT') throw error;
    }
  }
}

/** Runs the client `id` until the server says the last round closed, then shuts `agent` down. */
export async function runClient(agent: RpcAgent, id: ClientId, settings: ClientSettings, data: Split, hooks: ClientHooks = {}): Promise<void> {
  const samples = data.labels.length;
  const { rounds, deadlineMs } = await joinServer(agent, id, samples);
  // A round closes by its deadline at the latest: a call that waits much longer means the server is gone
  // (through a service import nobody answers "no responders", so only a timeout can tell).
  const roundTimeoutMs = deadlineMs + 15_000;
  console.log(`joined '${SERVER_NAME}': ${rounds} rounds, deadline ${deadlineMs} ms; training on ${samples} local rows`);
  let submitted = 0;
  let skipped = 0;
  let late = 0;
  let model = await firstRound(agent, id);
  while (!model.done) {
    const round = model.round;
    hooks.beforeRound?.(round);
    if (settings.skip.has(round)) {
      console.log(`round ${round}: sitting this round out silently, as --skip asks`);
      skipped++;
      tf.dispose(model.weights);
      model = await agent.rpcSync(SERVER_NAME, getGlobal, [id, round + 1], { timeoutMs: roundTimeoutMs });
      continue;
    }
    const globalAccuracy = hooks.onRound && hooks.heldOut ? evaluate(model.weights, hooks.heldOut.features, hooks.heldOut.labels).accuracy : Number.NaN;
    const local = trainLocally(model.weights, data, settings, settings.seed * 1_000 + round);
    tf.dispose(model.weights);
    const mine = hooks.onRound ? evaluate(local, data.features, data.labels) : undefined;
    const result = await agent.rpcSync(SERVER_NAME, submitUpdate, [id, round, local, samples], { timeoutMs: roundTimeoutMs });
    tf.dispose(local);
    if (result.accepted) submitted++;
    else {
      late++;
      console.log(`round ${round}: the update came after the round closed; continuing with round ${result.round}`);
    }
    if (mine) hooks.onRound!({ round, rounds, globalAccuracy, localLoss: mine.loss, localAccuracy: mine.accuracy, accepted: result.accepted });
    model = result;
  }
  if (hooks.onDone && hooks.heldOut) hooks.onDone(evaluate(model.weights, hooks.heldOut.features, hooks.heldOut.labels).accuracy);
  tf.dispose(model.weights);
  console.log(`done: ${submitted} updates averaged, ${late} too late, ${skipped} round(s) skipped; ${tf.memory().numTensors} tensors alive`);
  await agent.shutdown({ timeoutMs: 10_000 });
}
