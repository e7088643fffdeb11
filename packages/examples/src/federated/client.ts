/**
 * A federated client: joins the aggregation server, then each round pulls
 * the global model, trains it a few local epochs on its own (label-skewed)
 * data and submits the weights with its sample count. Its data never leaves
 * the process; only weights cross the account boundary. `--skip` makes it
 * sit a round out silently, `--crash` makes it kill itself mid-run.
 * @module
 */
import { tf } from '@tensorbus/core';
import type { RpcAgent } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';
import { seededRandom, shuffled } from '../common/random.js';
import type { Split } from '../parameter-server/data.js';
import { gradients } from '../parameter-server/model.js';
import { SERVER_NAME } from './accounts.js';
import { getGlobal, join, submitUpdate } from './server.js';
import type { Settings } from './settings.js';

type Tensor = TfNamespace.Tensor;

/** How long the first call may wait for round 1 to open (for all clients to join). */
const FIRST_ROUND_TIMEOUT_MS = 120_000;

/** Plain minibatch SGD from `weights` for `epochs` over `data`; returns new tensors. */
function trainLocally(weights: Tensor[], data: Split, settings: Settings, seed: number): Tensor[] {
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
async function joinServer(agent: RpcAgent, name: string, samples: number, waitMs = 30_000): Promise<{ rounds: number; deadlineMs: number }> {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      return await agent.rpcSync(SERVER_NAME, join, [name, samples], { timeoutMs: 2_000 });
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (Date.now() > until || (code !== 'RPC_TIMEOUT' && code !== 'WORKER_UNAVAILABLE')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** Runs the client until the server says the last round closed. */
export async function runClient(agent: RpcAgent, settings: Settings, data: Split): Promise<void> {
  const name = agent.self.name;
  const samples = data.labels.length;
  const { rounds, deadlineMs } = await joinServer(agent, name, samples);
  // A round closes by its deadline at the latest: a call that waits much longer means the server is gone
  // (through a service import nobody answers "no responders", so only a timeout can tell).
  const roundTimeoutMs = deadlineMs + 15_000;
  console.log(`joined '${SERVER_NAME}': ${rounds} rounds, deadline ${deadlineMs} ms; training on ${samples} local rows`);
  const skips = settings.skip.get(name) ?? new Set<number>();
  const crashAt = settings.crash.get(name);
  let submitted = 0;
  let skipped = 0;
  let late = 0;
  let model = await agent.rpcSync(SERVER_NAME, getGlobal, [name, 1], { timeoutMs: FIRST_ROUND_TIMEOUT_MS });
  while (!model.done) {
    const round = model.round;
    if (round === crashAt) {
      console.log(`round ${round}: crashing now (SIGKILL, no goodbye), as --crash ${name}:${round} asks`);
      process.kill(process.pid, 'SIGKILL');
    }
    if (skips.has(round)) {
      console.log(`round ${round}: sitting this round out silently, as --skip ${name}:${round} asks`);
      skipped++;
      tf.dispose(model.weights);
      model = await agent.rpcSync(SERVER_NAME, getGlobal, [name, round + 1], { timeoutMs: roundTimeoutMs });
      continue;
    }
    const local = trainLocally(model.weights, data, settings, settings.seed * 1_000 + round);
    tf.dispose(model.weights);
    const result = await agent.rpcSync(SERVER_NAME, submitUpdate, [name, round, local, samples], { timeoutMs: roundTimeoutMs });
    tf.dispose(local);
    if (result.accepted) submitted++;
    else {
      late++;
      console.log(`round ${round}: the update came after the round closed; continuing with round ${result.round}`);
    }
    model = result;
  }
  tf.dispose(model.weights);
  console.log(`done: ${submitted} updates averaged, ${late} too late, ${skipped} round(s) skipped; ${tf.memory().numTensors} tensors alive`);
  await agent.shutdown({ timeoutMs: 10_000 });
}
