/**
 * The aggregation server: the worker that hosts the rounds behind the remote
 * functions of protocol.ts, checks what each client sends (checks.ts) before
 * the rounds keep it, evaluates the global model on held-out data after each
 * round and prints progress.
 * @module
 */
import { InvalidArgumentError, tensorBackend, tf } from '@tensorbus/core';
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
 * Most calls of one client the server holds at once (waiting for a round to
 * open or close). An honest client has one, and a second while a timed-out
 * wait for round 1 is still held; more would only pin state on the server.
 */
export const MAX_WAITING_CALLS_PER_CLIENT = 4;

/**
 * The calls' side on this worker: every argument checked, then handed to
 * `rounds`. A client whose update is refused is dropped from the round.
 */
function federationHost(rounds: FedAvgRounds, tickets: ReadonlyMap<string, string>): FederationHost {
  const shapes = rounds.global.map((v) => v.shape);
  const waiting = new Map<string, number>();
  /** Runs `call` as one of `client`'s held calls, refusing it beyond the bound. */
  const held = <T>(client: string, call: () => Promise<T>): Promise<T> => {
    const count = waiting.get(client) ?? 0;
    if (count >= MAX_WAITING_CALLS_PER_CLIENT) {
      throw new InvalidArgumentError(`client '${client}' already has ${count} calls waiting: at most ${MAX_WAITING_CALLS_PER_CLIENT} calls at a time`);
    }
    waiting.set(client, count + 1);
    return call().finally(() => {
      const left = waiting.get(client)! - 1;
      if (left === 0) waiting.delete(client);
      else waiting.set(client, left);
    });
  };
  return {
    join: (id, samples) => rounds.join(checkClient(id, tickets), checkInteger('samples', samples, 1, MAX_SAMPLES)),
    model: (id, round) => {
      const client = checkClient(id, tickets);
      // Only the round open now or the next one: a call waiting for a later round would pin state.
      const wanted = checkInteger('round', round, 1, Math.min(rounds.current + 1, rounds.settings.rounds + 1));
      return held(client, () => rounds.model(client, wanted));
    },
    submit: (id, round, weights, samples) => {
      const client = checkClient(id, tickets);
      try {
        checkInteger('round', round, 1, rounds.settings.rounds + 1);
        const joined = rounds.joined.get(client);
        if (joined !== undefined) checkInteger('samples (as joined)', samples, joined, joined);
        const update = checkWeights(weights, shapes);
        return held(client, () => rounds.submit(client, round as number, update, samples as number));
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
