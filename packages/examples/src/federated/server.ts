/**
 * The aggregation server: the worker that hosts the rounds behind the remote
 * functions of protocol.ts, checks what each client sends (checks.ts) before
 * the rounds keep it, evaluates the global model on held-out data after each
 * round and prints progress.
 * @module
 */
import { tensorBackend, tf } from '@tensorbus/core';
import type { RpcAgent } from '@tensorbus/actors';
import { progressBar } from '../common/progress.js';
import { loadIris } from '../parameter-server/data.js';
import { createParams, evaluate } from '../parameter-server/model.js';
import { checkClient, checkInteger, checkWeights } from './checks.js';
import { hostFederation, type FederationHost } from './protocol.js';
import { FedAvgRounds, type RoundRecord } from './rounds.js';
import type { Settings } from './settings.js';

/** Most samples a client may claim (its weight in the average is its share of the claimed total). */
export const MAX_SAMPLES = 100_000;

/**
 * The calls' side on this worker: every argument checked, then handed to
 * `rounds`. A client whose update is refused is dropped from the round.
 */
function federationHost(rounds: FedAvgRounds, tickets: ReadonlyMap<string, string>): FederationHost {
  const shapes = rounds.global.map((v) => v.shape);
  return {
    join: (id, samples) => rounds.join(checkClient(id, tickets), checkInteger('samples', samples, 1, MAX_SAMPLES)),
    model: (id, round) => {
      const client = checkClient(id, tickets);
      // Only the round open now or the next one: a call waiting for a later round would pin state.
      return rounds.model(client, checkInteger('round', round, 1, Math.min(rounds.current + 1, rounds.settings.rounds + 1)));
    },
    submit: (id, round, weights, samples) => {
      const client = checkClient(id, tickets);
      try {
        checkInteger('round', round, 1, rounds.settings.rounds + 1);
        const joined = rounds.joined.get(client);
        if (joined !== undefined) checkInteger('samples (as joined)', samples, joined, joined);
        return rounds.submit(client, round as number, checkWeights(weights, shapes), samples as number);
      } catch (error) {
        rounds.refuse(client);
        throw error;
      }
    },
  };
}

/** One evaluated round: the record plus the global model's held-out accuracy and loss after it. */
export interface RoundResult extends Partial<RoundRecord> {
  round: number;
  testAccuracy: number;
  testLoss: number;
  /** Tensors alive in the server process when the round closed (flat: nothing leaks). */
  tensors: number;
}

/**
 * Hosts the rounds on this worker for the clients `tickets` names (round 1
 * opens once all of them joined) until the last round closed; reports each
 * round as it closes.
 */
export async function runServer(agent: RpcAgent, settings: Settings, tickets: ReadonlyMap<string, string>, report: (result: RoundResult) => void): Promise<RoundResult[]> {
  const clients = tickets.size;
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
  const hosted = new FedAvgRounds(global, { rounds: settings.rounds, deadlineMs: settings.deadlineMs, clients }, (record) => {
    const result = evaluateGlobal(record);
    const joined = hosted.joined.size;
    const missing = record.missing.length > 0 ? `; missing ${record.missing.join(', ')}` : '';
    console.log(
      `round ${String(record.round).padStart(3)}/${settings.rounds} ${progressBar(record.round, settings.rounds)}  ` +
        `test accuracy ${(100 * result.testAccuracy).toFixed(1).padStart(5)}%  participants ${record.participants.length}/${joined} ` +
        `(closed: ${record.closedBy === 'all' ? 'all live clients submitted' : 'deadline'} after ${record.seconds.toFixed(2)} s${missing})`,
    );
    if (record.round === settings.rounds) finished();
  });
  hostFederation(federationHost(hosted, tickets));
  const initial = evaluateGlobal({ round: 0 });
  console.log(
    `aggregation server '${agent.self.name}': waiting for ${clients} clients, ${settings.rounds} rounds, deadline ${settings.deadlineMs} ms per round, ` +
      `initial test accuracy ${(100 * initial.testAccuracy).toFixed(1)}%, TensorFlow.js backend ${tensorBackend()}`,
  );
  await allDone;
  // The last answers go out before the worker leaves (a graceful shutdown drains served calls).
  await agent.shutdown({ timeoutMs: 10_000 });
  hostFederation(undefined);
  hosted.dispose();
  global.forEach((v) => v.dispose());
  return results;
}
