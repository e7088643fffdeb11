import test from 'ava';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { localTransport, tf } from '@tensorbus/core';
import { DistributedOptimizer, initRpc } from '@tensorbus/actors';
import { SyntheticImages, DEFAULT_TASK } from '../src/pipeline/data.js';
import { PipelinedClassifier } from '../src/pipeline/pipelined-model.js';
import type { PipelineReport } from '../src/pipeline/report.js';
import { denseForward, scalePixels } from '../src/pipeline/shards.js';
import { trainStep } from '../src/pipeline/training.js';
import { launchExample } from './run-examples.js';


test('examples - pipeline: a step over 5 micro-batches through two shards updates the weights as the whole model trained locally would', async (t) => {
  const transport = localTransport();
  const agents = await Promise.all(['master', 'shard1', 'shard2'].map((name) => initRpc({ name, transport })));
  const [master] = agents;
  t.teardown(() => Promise.all(agents.map((a) => a.shutdown({ graceful: false }).catch(() => undefined))));
  const task = new SyntheticImages({ ...DEFAULT_TASK, size: 8 });
  const model = await PipelinedClassifier.create(master!, ['shard1', 'shard2'], { inputs: 64, hidden1: [24, 16], hidden2: [16], classes: 10 }, 3);
  const params = await model.parameterRRefs();
  t.is(params.length, 8);
  t.deepEqual([...new Set(params.map((p) => p.ownerName()))], ['shard1', 'shard2']);
  const before = await Promise.all(params.map(async (p) => ({ values: (await (await p.toHere()).array()) as number[] | number[][], shape: (await p.toHere()).shape })));
  const lr = 0.5;
  const opt = await DistributedOptimizer.create(master!, 'sgd', params, { learningRate: lr });
  const batch = task.sampler(11)(12);

  const result = await trainStep(master!, model, opt, batch, 5);
  t.true(Number.isFinite(result.loss) && result.loss > 0);

  // The same step, locally, on the whole batch at once.
  const expected = tf.tidy(() => {
    const weights = before.map((b) => tf.tensor(b.values, b.shape));
    const x = scalePixels(tf.tensor2d(batch.pixels, [12, 64], 'int32'));
    const y = tf.oneHot(tf.tensor1d(batch.labels, 'int32'), 10);
    const lossOf = (...p: tf.Tensor[]) => tf.losses.softmaxCrossEntropy(y, denseForward(p.slice(4), denseForward(p.slice(0, 4), x, false), true));
    t.true(Math.abs(lossOf(...weights).dataSync()[0]! - result.loss) < 1e-5, 'the pipelined loss is the loss of the whole batch');
    const grads = tf.grads(lossOf)(weights);
    return weights.map((w, i) => tf.sub(w, tf.mul(lr, grads[i]!)));
  });
  const after = await Promise.all(params.map((p) => p.toHere()));
  after.forEach((value, i) => {
    const gap = tf.tidy(() => tf.max(tf.abs(tf.sub(value, expected[i]!))).dataSync()[0]!);
    t.true(gap < 1e-5, `parameter ${i} (on ${params[i]!.ownerName()}) is off by ${gap}`);
    const moved = tf.tidy(() => tf.max(tf.abs(tf.sub(value, tf.tensor(before[i]!.values, before[i]!.shape)))).dataSync()[0]!);
    t.true(moved > 0, `parameter ${i} was updated`);
  });
  tf.dispose([...expected, ...after]);
  await opt.dispose();
  await Promise.all(params.map((p) => p.release()));
  await model.release();
});

test('examples - pipeline: master and two shards in 3 processes train, report throughput for every micro-batch count and write results', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'tb-pipeline-'));
  const args = ['--splits', '1,2,4,8', '--batches', '3', '--warmup', '1', '--batch-size', '64', '--width', '128', '--test-size', '200', '--lr', '0.003', '--out', out];
  const { code, stdout } = await launchExample(['master', 'shard1', 'shard2'], 'pipeline/main.js', args);
  t.is(code, 0, stdout);
  t.regex(stdout, /\[master\s*\] round\s+1\/4 \[#+\.+\]/, 'progress is shown per round');
  t.regex(stdout, /\[master\s*\] round\s+4\/4 \[#+\] 100%  loss \d\.\d+  held-out accuracy/);
  for (const [parts, size] of [[1, 64], [2, 32], [4, 16], [8, 8]]) {
    t.regex(stdout, new RegExp(`micro-batches ${parts} \\(of ${size} samples\\): throughput \\d+\\.\\d samples/s, \\d+\\.\\d\\dx of 1`), `throughput of ${parts} micro-batches is reported`);
  }
  t.regex(stdout, /final held-out accuracy/);

  const report = JSON.parse(readFileSync(join(out, 'pipeline.json'), 'utf8')) as PipelineReport;
  t.deepEqual(report.settings.map((s) => s.microBatches), [1, 2, 4, 8]);
  for (const s of report.settings) {
    t.is(s.timedBatches, 3);
    t.true(Number.isFinite(s.samplesPerSecond) && s.samplesPerSecond > 0, `samples/s with ${s.microBatches} micro-batches: ${s.samplesPerSecond}`);
  }
  t.is(report.steps.length, 16);
  t.deepEqual(report.steps.map((s) => s.step), Array.from({ length: 16 }, (_, i) => i + 1));
  t.deepEqual(report.steps.map((s) => s.microBatches), [1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8], 'each round runs every micro-batch count');
  t.deepEqual(report.steps.map((s) => s.timed), [false, false, false, false, ...Array<boolean>(12).fill(true)], 'the warm-up round is not timed');
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const first = mean(report.steps.slice(0, 4).map((s) => s.loss));
  const last = mean(report.steps.slice(-4).map((s) => s.loss));
  t.true(last < 0.8 * first, `training loss fell from ${first} (first round) to ${last} (last round)`);
  t.is(report.rounds.length, 4);
  const final = report.rounds[3]!;
  t.true(final.testAccuracy > report.initialTest.accuracy + 0.2, `held-out accuracy went from ${report.initialTest.accuracy} to ${final.testAccuracy}`);
  t.true(existsSync(join(out, 'pipeline.svg')));
  t.regex(readFileSync(join(out, 'pipeline.svg'), 'utf8'), /samples \/ s/);
});
