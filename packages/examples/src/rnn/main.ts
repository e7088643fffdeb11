/**
 * The model-parallel RNN example [PyTorch's "Distributed RNN using
 * Distributed Autograd and Distributed Optimizer"]: a word language model
 * whose embedding table and decoder live on the parameter server `ps` while
 * the LSTM runs on each trainer. Run through the launcher:
 *
 *   tensorbus launch -n 2 --names ps,trainer main.js [--epochs 20] [--out out]
 *
 * (`--names ps,trainer1,trainer2` trains two models, each on its part of the
 * corpus, with their remote halves on the same `ps`.) Each trainer prints its
 * progress per epoch and a few generated sentences; `ps` writes
 * `out/rnn.svg` and `out/rnn.json`. Other flags: `--batch-size`, `--bptt`,
 * `--emsize`, `--nhid`, `--optimizer`, `--lr`, `--sentences`, `--seed`.
 * @module
 */
import { tf, tensorBackend } from '@tensorbus/core';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import { loadCorpus } from './corpus.js';
import { writeResults } from './results.js';
import { collectReports } from './server.js';
import { parseSettings, type Settings } from './settings.js';
import { runTrainer } from './trainer.js';

/** Runs the parameter server until every trainer reported; `baseline` is its tensor count before any module. */
async function runServer(agent: RpcAgent, s: Settings, baseline: number): Promise<void> {
  const trainers = agent.workers().length - 1;
  const reports = collectReports(trainers);
  const started = Date.now();
  const corpus = loadCorpus(s.sentences);
  console.log(
    `parameter server '${agent.self.name}': hosts the embedding tables and decoders of ${trainers} trainer${trainers > 1 ? 's' : ''}; ` +
      `corpus of ${corpus.train.length + corpus.valid.length} generated words, vocabulary ${corpus.vocab.length}; TensorFlow.js backend ${tensorBackend()}`,
  );
  const done = await reports;
  const seconds = (Date.now() - started) / 1000;
  // Every trainer has freed its modules, disposed its optimizer and left its last context: nothing may remain.
  const ps = { tensorsBefore: baseline, tensorsAfter: tf.memory().numTensors, contextsHeld: agent.distAutograd.size };
  const paths = writeResults(
    s,
    {
      backend: tensorBackend(),
      seconds,
      corpus: { words: corpus.train.length + corpus.valid.length, vocabulary: corpus.vocab.length, trainWords: corpus.train.length, validWords: corpus.valid.length },
      ps,
    },
    done,
  );
  for (const report of done) {
    const first = report.curve[0]!;
    const last = report.curve[report.curve.length - 1]!;
    console.log(
      `${report.name}: validation perplexity ${first.validPerplexity.toFixed(1)} → ${last.validPerplexity.toFixed(1)} ` +
        `(loss ${first.validLoss.toFixed(3)} → ${last.validLoss.toFixed(3)}) after ${last.epoch} epochs`,
    );
  }
  console.log(`on '${agent.self.name}': autograd contexts still held ${ps.contextsHeld}; tensors ${ps.tensorsBefore} before the trainers' modules, ${ps.tensorsAfter} after`);
  console.log(`done in ${seconds.toFixed(1)} s; curves written to ${paths.svg} and ${paths.json}`);
}

const s = parseSettings(process.argv.slice(2));
const baseline = tf.memory().numTensors;
const agent = await initRpc();
if (agent.self.name === 'ps') await runServer(agent, s, baseline);
else await runTrainer(agent, s, baseline);
await agent.shutdown();
