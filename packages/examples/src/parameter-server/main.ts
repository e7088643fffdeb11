/**
 * The parameter-server example (the demo): `ps` holds a classifier and
 * applies batched updates; `trainer1..N` compute gradients on their shards of
 * the iris data. Run through the launcher:
 *
 *   tensorbus launch -n 5 --names ps,trainer1,trainer2,trainer3,trainer4 main.js [--epochs 60] [--pace MS]
 *
 * With `--checkpoint-every K` (and `tensorbus launch --max-restarts N`), `ps`
 * saves its state to JetStream every K epochs; killed, it is restarted by the
 * launcher and restores it; the trainers, whose calls fail meanwhile, wait for
 * it, fetch its step and parameters and carry on from there (checkpoint.ts).
 *
 * `--pace MS` makes the trainers pause at each epoch (`npm run demo` uses it
 * so that the dashboard it serves shows the learning as it happens).
 *
 * The server prints progress each epoch with held-out accuracy, writes the
 * curves to `out/parameter-server.svg` (and `.json`) and the final accuracy.
 * @module
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tf, tensorBackend } from '@tensorbus/core';
import { initRpc, reportStat, type RpcAgent } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';
import { progressBar } from '../common/progress.js';
import { writeChart } from '../common/svg-chart.js';
import { loadIris, shard } from './data.js';
import { evaluate, gradients } from './model.js';
import { BatchUpdateParameterServer, fetchState, hostParameterServer, pushGradients } from './server.js';
import { ParameterServerCheckpoints, type CurvePoint } from './checkpoint.js';
import { flagReader } from '../common/args.js';

interface Settings {
  epochs: number;
  batchSize: number;
  learningRate: number;
  out: string;
  /** Trainers pause this long at each epoch, ms (the demo slows down so that its dashboard can be watched). */
  paceMs: number;
  /** `ps` saves a checkpoint every this many epochs (0: never). */
  checkpointEvery: number;
}

function settings(argv: string[]): Settings {
  const value = flagReader(argv);
  return {
    epochs: Number(value('--epochs', '60')),
    batchSize: Number(value('--batch-size', '8')),
    learningRate: Number(value('--lr', '0.02')),
    out: resolve(value('--out', 'out')),
    paceMs: Number(value('--pace', '0')),
    checkpointEvery: Number(value('--checkpoint-every', '0')),
  };
}

async function runServer(agent: RpcAgent, s: Settings): Promise<void> {
  const data = loadIris();
  const trainers = agent.workers().length - 1;
  const stepsPerEpoch = Math.ceil(Math.ceil(data.train.labels.length / trainers) / s.batchSize);
  let curve: CurvePoint[] = [];
  const started = Date.now();
  console.log(`parameter server on '${agent.self.name}' (pid ${process.pid}): ${trainers} trainers, ${s.epochs} epochs of ${stepsPerEpoch} batched updates, TensorFlow.js backend ${tensorBackend()}`);
  const report = (epoch: number) => {
    const train = evaluate(ps.params, data.train.features, data.train.labels);
    const test = evaluate(ps.params, data.test.features, data.test.labels);
    curve.push({ epoch, trainLoss: train.loss, testLoss: test.loss, testAccuracy: test.accuracy });
    // Shown by `tensorbus status` and plotted by the dashboard (`npm run demo` serves it).
    reportStat(agent, 'train_loss', train.loss);
    reportStat(agent, 'test_accuracy', test.accuracy);
    reportStat(agent, 'epoch', epoch);
    console.log(`epoch ${String(epoch).padStart(3)}/${s.epochs} ${progressBar(epoch, s.epochs)}  train loss ${train.loss.toFixed(3)}  test accuracy ${(100 * test.accuracy).toFixed(1)}%`);
  };
  const checkpoints = s.checkpointEvery > 0 ? await ParameterServerCheckpoints.open() : undefined;
  const ps = new BatchUpdateParameterServer(trainers, s.learningRate, async (step) => {
    if (step % stepsPerEpoch !== 0) return;
    const epoch = step / stepsPerEpoch;
    report(epoch);
    if (checkpoints && epoch % s.checkpointEvery === 0) {
      await checkpoints.save(ps, curve);
      console.log(`checkpoint saved at epoch ${epoch}`);
    }
  });
  const restart = Number(process.env.TENSORBUS_RESTART_COUNT ?? 0);
  const restored = checkpoints && restart > 0 ? await checkpoints.restore(ps) : undefined;
  if (restored) {
    curve = restored;
    console.log(`restart ${restart}: restored the checkpoint of epoch ${ps.step / stepsPerEpoch} (step ${ps.step})`);
  } else {
    if (checkpoints && restart === 0) await checkpoints.clear();
    report(0);
  }
  hostParameterServer(ps);
  await agent.shutdown({ timeoutMs: 0 });
  await checkpoints?.close();
  // The run's time is the training's, up to the group's shutdown: writing the curve and its chart after it is not timed.
  const seconds = (Date.now() - started) / 1000;
  mkdirSync(s.out, { recursive: true });
  const final = curve[curve.length - 1]!;
  writeFileSync(join(s.out, 'parameter-server.json'), JSON.stringify({ trainers, epochs: s.epochs, seconds, curve }, null, 2));
  const chart = writeChart(join(s.out, 'parameter-server.svg'), {
    title: `Parameter server, ${trainers} trainers, batched updates (iris)`,
    xLabel: 'epoch',
    yLabel: 'cross-entropy',
    yRightLabel: 'test accuracy',
    xAxis: { integer: true },
    yRightAxis: { percent: true },
    series: [
      { label: 'train loss', points: curve.map((c) => [c.epoch, c.trainLoss]) },
      { label: 'test loss', points: curve.map((c) => [c.epoch, c.testLoss]) },
      { label: 'test accuracy', points: curve.map((c) => [c.epoch, c.testAccuracy]), right: true },
    ],
  });
  console.log(`final test accuracy ${(100 * final.testAccuracy).toFixed(1)}% after ${s.epochs} epochs in ${seconds.toFixed(1)} s`);
  console.log(`plot written to ${chart}`);
}

/** Fetches ps's step and parameters, retrying while ps is away (restarting), for at most two minutes. */
async function awaitServer(agent: RpcAgent): Promise<{ step: number; params: TfNamespace.Tensor[] }> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      return await agent.rpcSync('ps', fetchState, [], { timeoutMs: 10_000 });
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

async function runTrainer(agent: RpcAgent, s: Settings): Promise<void> {
  const data = loadIris();
  const trainers = agent.workers().length - 1;
  const mine = shard(data.train, agent.self.id - 1, trainers);
  const stepsPerEpoch = Math.ceil(Math.ceil(data.train.labels.length / trainers) / s.batchSize);
  const totalSteps = s.epochs * stepsPerEpoch;
  let { step, params } = await agent.rpcSync('ps', fetchState, []);
  while (step < totalSteps) {
    if (step % stepsPerEpoch === 0) {
      reportStat(agent, 'epoch', step / stepsPerEpoch);
      if (s.paceMs > 0) await new Promise((resolve) => setTimeout(resolve, s.paceMs));
    }
    const from = ((step % stepsPerEpoch) * s.batchSize) % mine.labels.length;
    const rows = Array.from({ length: s.batchSize }, (_, k) => (from + k) % mine.labels.length);
    const x = tf.tensor2d(rows.map((r) => mine.features[r]!));
    const y = tf.tensor1d(rows.map((r) => mine.labels[r]!), 'int32');
    const grads = gradients(params, x, y);
    tf.dispose([x, y, ...params]);
    try {
      params = await agent.rpcSync('ps', pushGradients, [step, grads]);
      step++;
    } catch (error) {
      // ps went away (or came back from a checkpoint at another step): wait for it and carry on from its step.
      console.log(`step ${step}: ${(error as { code?: string }).code ?? (error as Error).message}; waiting for ps`);
      ({ step, params } = await awaitServer(agent));
      console.log(`ps is back at step ${step}`);
    } finally {
      tf.dispose(grads);
    }
  }
  tf.dispose(params);
  await agent.shutdown({ timeoutMs: 0 });
}

const s = settings(process.argv.slice(2));
const agent = await initRpc();
if (agent.self.name === 'ps') await runServer(agent, s);
else await runTrainer(agent, s);
