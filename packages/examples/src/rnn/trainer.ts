/**
 * The trainer's role: builds its model (embedding and decoder on the
 * parameter server, LSTM here), trains it on its part of the corpus with a
 * `DistributedOptimizer` over every parameter, prints progress per epoch,
 * generates a few sentences, frees everything it made (here and on the
 * parameter server), checks that no autograd context or tensor is left
 * here, and hands its report to the parameter server.
 * @module
 */
import { tf } from '@tensorbus/core';
import { DistributedOptimizer, type RpcAgent } from '@tensorbus/actors';
import { progressBar } from '../common/progress.js';
import { batchify, bpttBatches, encode, loadCorpus, shard } from './corpus.js';
import { RNNModel } from './model.js';
import { submitReport, type EpochPoint, type TrainerReport } from './server.js';
import type { Settings } from './settings.js';
import { evaluate, generate, trainEpoch } from './training.js';

const PS = 'ps';
/** Prompts the trained model continues; the plural ones show whether it learned agreement. */
const PROMPTS = ['the', 'the girls', 'a hungry fox', 'the children', 'every teacher'];
const EVAL_BATCH_SIZE = 10;

function count(variables: tf.Variable[]): number {
  return variables.reduce((n, v) => n + v.size, 0);
}

/**
 * Runs a trainer until its report is handed in; does not shut the agent
 * down. `baseline` is the process's tensor count before the model.
 */
export async function runTrainer(agent: RpcAgent, s: Settings, baseline: number): Promise<void> {
  const trainers = agent.workers().length - 1;
  const index = agent.workers().filter((w) => w.name !== PS).findIndex((w) => w.name === agent.self.name);
  const corpus = loadCorpus(s.sentences);
  const ntoken = corpus.vocab.length;
  const train = bpttBatches(batchify(shard(corpus.train, index, trainers), s.batchSize), s.bptt);
  const valid = bpttBatches(batchify(corpus.valid, EVAL_BATCH_SIZE), s.bptt);
  const words = train.reduce((n, b) => n + b.input.length * b.input[0]!.length, 0);

  const model = await RNNModel.create(agent, PS, { ntoken, ninp: s.emsize, nhid: s.nhid, dropout: s.dropout, seed: s.seed + 10 * index });
  const params = await model.parameterRRefs();
  const optimizer = await DistributedOptimizer.create(agent, s.optimizer, params, { learningRate: s.learningRate });
  const local = count(model.lstm.parameters());
  console.log(
    `trainer '${agent.self.name}': ${words} training words (vocabulary ${ntoken}), ${train.length} batches of ${s.batchSize}x${s.bptt} per epoch; ` +
      `embedding ${ntoken}x${s.emsize} and decoder ${s.nhid}x${ntoken} on '${PS}', LSTM of ${s.nhid} units here (${local} parameters); ` +
      `${s.optimizer} (lr ${s.learningRate}) over ${params.length} parameter RRefs`,
  );

  const started = Date.now();
  const validLoss = await evaluate(model, valid);
  const curve: EpochPoint[] = [{ epoch: 0, trainLoss: null, validLoss, validPerplexity: Math.exp(validLoss), seconds: 0 }];
  console.log(`epoch ${String(0).padStart(3)}/${s.epochs} ${progressBar(0, s.epochs)}  valid loss ${validLoss.toFixed(3)} (perplexity ${Math.exp(validLoss).toFixed(1)})`);
  const tensors = { before: baseline, afterFirstEpoch: 0, afterLastEpoch: 0, after: 0 };
  for (let epoch = 1; epoch <= s.epochs; epoch++) {
    const epochStarted = Date.now();
    const trainLoss = await trainEpoch(agent, model, optimizer, train);
    const seconds = (Date.now() - epochStarted) / 1000;
    const validLoss = await evaluate(model, valid);
    curve.push({ epoch, trainLoss, validLoss, validPerplexity: Math.exp(validLoss), seconds: (Date.now() - started) / 1000 });
    if (epoch === 1) tensors.afterFirstEpoch = tf.memory().numTensors;
    tensors.afterLastEpoch = tf.memory().numTensors;
    console.log(
      `epoch ${String(epoch).padStart(3)}/${s.epochs} ${progressBar(epoch, s.epochs)}  train loss ${trainLoss.toFixed(3)} (perplexity ${Math.exp(trainLoss).toFixed(1)})  ` +
        `valid loss ${validLoss.toFixed(3)} (perplexity ${Math.exp(validLoss).toFixed(1)})  ${seconds.toFixed(1)} s, ${Math.round(words / seconds)} words/s`,
    );
  }

  const samples: TrainerReport['samples'] = [];
  const stop = corpus.vocab.indexOf('.');
  for (const prompt of PROMPTS) {
    // The prompt starts a sentence: the model reads a full stop first.
    const ids = await generate(model, encode(corpus.vocab, prompt), stop, [stop]);
    samples.push({ prompt, text: ids.map((id) => corpus.vocab[id]).join(' ') });
  }
  console.log('greedy continuations of a few prompts:');
  for (const { prompt, text } of samples) console.log(`  ${prompt.padEnd(14)} → ${text}`);

  await optimizer.dispose();
  // Releasing the RRefs of the LSTM's weights, the last references to values owned here, would dispose them too.
  await model.release();
  await Promise.all(params.map((p) => p.release()));
  tensors.after = tf.memory().numTensors;
  const contextsHeld = agent.distAutograd.size;
  console.log(
    `autograd contexts still held here: ${contextsHeld}; tensors here: ${tensors.before} before the model, ` +
      `${tensors.afterFirstEpoch} after epoch 1, ${tensors.afterLastEpoch} after epoch ${s.epochs}, ${tensors.after} once it was released`,
  );
  await agent.rpcSync(PS, submitReport, [
    { name: agent.self.name, curve, samples, tensors, contextsHeld, batchesPerEpoch: train.length, trainWords: words },
  ]);
}
