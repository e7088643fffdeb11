/**
 * The aggregation server: its remote functions (the only things the clients'
 * accounts can reach, through the service the server's account exports) and
 * the worker that hosts the rounds, evaluates the global model on held-out
 * data after each round and prints progress.
 * @module
 */
import { tensorBackend, tf } from '@tensorbus/core';
import { remoteFunction, type RpcAgent } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';
import { progressBar } from '../common/progress.js';
import { loadIris } from '../parameter-server/data.js';
import { createParams, evaluate } from '../parameter-server/model.js';
import { FedAvgRounds, type RoundRecord } from './rounds.js';
import type { Settings } from './settings.js';

type Tensor = TfNamespace.Tensor;

let hosted: FedAvgRounds | undefined;

function rounds(): FedAvgRounds {
  if (!hosted) throw new Error('this worker hosts no federated-averaging server');
  return hosted;
}

/** A client joins with its name and sample count; answers the number of rounds and the deadline. */
export const join = remoteFunction('fed.join', (client: string, samples: number) => rounds().join(client, samples));

/** The global model of `round`, once that round is open [async_execution]. */
export const getGlobal = remoteFunction('fed.getGlobal', (client: string, round: number) => rounds().model(client, round));

/** Submits a client's weights for `round`; answers the next global model once the round closed [async_execution]. */
export const submitUpdate = remoteFunction('fed.submitUpdate', (client: string, round: number, weights: Tensor[], samples: number) =>
  rounds().submit(client, round, weights, samples),
);

/** One evaluated round: the record plus the global model's held-out accuracy and loss after it. */
export interface RoundResult extends Partial<RoundRecord> {
  round: number;
  testAccuracy: number;
  testLoss: number;
  /** Tensors alive in the server process when the round closed (flat: nothing leaks). */
  tensors: number;
}

/** Hosts the rounds on this worker until the last one closed; reports each round as it closes. */
export async function runServer(agent: RpcAgent, settings: Settings, clients: number, report: (result: RoundResult) => void): Promise<RoundResult[]> {
  const data = loadIris();
  const results: RoundResult[] = [];
  const evaluateGlobal = (record: Partial<RoundRecord> & { round: number }): RoundResult => {
    const test = evaluate(global, data.test.features, data.test.labels);
    const result: RoundResult = { ...record, testAccuracy: test.accuracy, testLoss: test.loss, tensors: tf.memory().numTensors };
    results.push(result);
    report(result);
    return result;
  };
  const global = createParams(4, 16, 3, settings.seed);
  let finished!: () => void;
  const allDone = new Promise<void>((resolve) => (finished = resolve));
  hosted = new FedAvgRounds(global, { rounds: settings.rounds, deadlineMs: settings.deadlineMs, clients }, (record) => {
    const result = evaluateGlobal(record);
    const joined = hosted!.joined.size;
    const missing = record.missing.length > 0 ? `; missing ${record.missing.join(', ')}` : '';
    console.log(
      `round ${String(record.round).padStart(3)}/${settings.rounds} ${progressBar(record.round, settings.rounds)}  ` +
        `test accuracy ${(100 * result.testAccuracy).toFixed(1).padStart(5)}%  participants ${record.participants.length}/${joined} ` +
        `(closed: ${record.closedBy === 'all' ? 'all live clients submitted' : 'deadline'} after ${record.seconds.toFixed(2)} s${missing})`,
    );
    if (record.round === settings.rounds) finished();
  });
  const initial = evaluateGlobal({ round: 0 });
  console.log(
    `aggregation server '${agent.self.name}': waiting for ${clients} clients, ${settings.rounds} rounds, deadline ${settings.deadlineMs} ms per round, ` +
      `initial test accuracy ${(100 * initial.testAccuracy).toFixed(1)}%, TensorFlow.js backend ${tensorBackend()}`,
  );
  await allDone;
  // The last answers go out before the worker leaves (a graceful shutdown drains served calls).
  await agent.shutdown({ timeoutMs: 10_000 });
  hosted.dispose();
  global.forEach((v) => v.dispose());
  hosted = undefined;
  return results;
}
