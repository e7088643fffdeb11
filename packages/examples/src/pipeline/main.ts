/**
 * The pipeline-parallelism example [PyTorch's "Distributed Pipeline
 * Parallelism Using RPC"]: a classifier split in two shards on `shard1` and
 * `shard2`, trained from `master`, which cuts each batch into micro-batches
 * and streams them through the shards. Run through the launcher:
 *
 *   tensorbus launch -n 3 --names master,shard1,shard2 main.js [--splits 1,2,4,8] [--batches 20]
 *
 * The master trains in rounds; each round runs one step with each micro-batch
 * count of `--splits`, so that every count is timed under the same conditions
 * (other load on the machine comes and goes during a run). The first
 * `--warmup` rounds are not timed. After each round it prints the loss and the
 * held-out accuracy; at the end, the throughput of each micro-batch count, and
 * it writes `out/pipeline.json` and `out/pipeline.svg`.
 * @module
 */
import { resolve } from 'node:path';
import { tensorBackend } from '@tensorbus/core';
import { DistributedOptimizer, initRpc, type RpcAgent } from '@tensorbus/actors';
import { progressBar } from '../common/progress.js';
import { DEFAULT_TASK, SyntheticImages } from './data.js';
import { microBatchSizes, PipelinedClassifier, type ModelShape } from './pipelined-model.js';
import { writeReport, type RoundRecord, type SettingRecord, type StepRecord } from './report.js';
import { evaluate, trainStep } from './training.js';
import { flagReader } from '../common/args.js';

interface Settings {
  splits: number[];
  batches: number;
  warmup: number;
  batchSize: number;
  width: number;
  imageSize: number;
  learningRate: number;
  testSize: number;
  seed: number;
  out: string;
}

function settings(argv: string[]): Settings {
  const value = flagReader(argv);
  const s: Settings = {
    splits: value('--splits', '1,2,4,8').split(',').map(Number),
    batches: Number(value('--batches', '20')),
    warmup: Number(value('--warmup', '1')),
    batchSize: Number(value('--batch-size', '1000')),
    width: Number(value('--width', '512')),
    imageSize: Number(value('--image-size', String(DEFAULT_TASK.size))),
    learningRate: Number(value('--lr', '0.001')),
    testSize: Number(value('--test-size', '500')),
    seed: Number(value('--seed', '1')),
    out: resolve(value('--out', 'out')),
  };
  if (s.splits.length === 0 || s.splits.some((n) => !Number.isInteger(n) || n < 1 || n > s.batchSize)) {
    throw new Error(`--splits wants micro-batch counts between 1 and the batch size, got ${value('--splits', '')}`);
  }
  for (const key of ['batches', 'batchSize', 'width', 'imageSize', 'testSize'] as const) {
    if (!Number.isInteger(s[key]) || s[key] < 1) throw new Error(`--${key} must be a positive integer`);
  }
  if (!Number.isInteger(s.warmup) || s.warmup < 0) throw new Error('--warmup must be a non-negative integer');
  return s;
}

/** Weights and biases of dense layers of these sizes. */
function parameterCount(sizes: number[]): number {
  return sizes.slice(1).reduce((sum, out, i) => sum + (sizes[i]! + 1) * out, 0);
}

const percent = (x: number) => `${(100 * x).toFixed(1)}%`;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

function summarise(parts: number, batchSize: number, steps: StepRecord[]): SettingRecord {
  const timed = steps.filter((st) => st.microBatches === parts && st.timed);
  const seconds = timed.reduce((sum, st) => sum + st.seconds, 0);
  const sorted = timed.map((st) => st.seconds).sort((a, b) => a - b);
  const median = (sorted[(sorted.length - 1) >> 1]! + sorted[sorted.length >> 1]!) / 2;
  return {
    microBatches: parts,
    microBatchSize: microBatchSizes(batchSize, parts)[0]!,
    timedBatches: timed.length,
    samplesPerSecond: (timed.length * batchSize) / seconds,
    medianSamplesPerSecond: batchSize / median,
    meanStepSeconds: seconds / timed.length,
    medianStepSeconds: median,
    meanForwardSeconds: mean(timed.map((st) => st.forwardSeconds)),
    meanBackwardSeconds: mean(timed.map((st) => st.backwardSeconds)),
    meanOptimizerSeconds: mean(timed.map((st) => st.optimizerSeconds)),
  };
}

async function runMaster(agent: RpcAgent, s: Settings): Promise<void> {
  const started = performance.now();
  const task = new SyntheticImages({ ...DEFAULT_TASK, size: s.imageSize });
  const shape: ModelShape = { inputs: task.pixelsPerImage, hidden1: [s.width, s.width], hidden2: [s.width, s.width], classes: task.options.classes };
  const parameters = {
    shard1: parameterCount([shape.inputs, ...shape.hidden1]),
    shard2: parameterCount([s.width, ...shape.hidden2, shape.classes]),
  };
  const model = await PipelinedClassifier.create(agent, ['shard1', 'shard2'], shape, s.seed);
  const paramRRefs = await model.parameterRRefs();
  const optimizer = await DistributedOptimizer.create(agent, 'adam', paramRRefs, { learningRate: s.learningRate });
  const nextBatch = task.sampler(s.seed + 1);
  const testBatch = task.sampler(s.seed + 1_000_000)(s.testSize);
  const rounds = s.warmup + s.batches;
  console.log(
    `pipeline: ${task.options.classes} classes of ${s.imageSize}x${s.imageSize} images; ` +
      `shard1 ${[shape.inputs, ...shape.hidden1].join('->')} on 'shard1' (${parameters.shard1.toLocaleString('en')} parameters), ` +
      `shard2 ${[s.width, ...shape.hidden2, shape.classes].join('->')} on 'shard2' (${parameters.shard2.toLocaleString('en')} parameters); ` +
      `batches of ${s.batchSize} in ${s.splits.join(', ')} micro-batches, one step of each per round, ${s.warmup} warm-up + ${s.batches} timed rounds; ` +
      `TensorFlow.js backend ${tensorBackend()}`,
  );
  const initialTest = await evaluate(model, testBatch, s.splits[s.splits.length - 1]!);
  console.log(`before training: held-out loss ${initialTest.loss.toFixed(3)}, accuracy ${percent(initialTest.accuracy)}`);
  const steps: StepRecord[] = [];
  const roundRecords: RoundRecord[] = [];
  for (let round = 1; round <= rounds; round++) {
    const timed = round > s.warmup;
    for (const parts of s.splits) {
      const result = await trainStep(agent, model, optimizer, nextBatch(s.batchSize), parts);
      steps.push({ step: steps.length + 1, round, microBatches: parts, timed, ...result });
    }
    const test = await evaluate(model, testBatch, s.splits[s.splits.length - 1]!);
    roundRecords.push({ round, step: steps.length, testLoss: test.loss, testAccuracy: test.accuracy });
    const mine = steps.filter((st) => st.round === round);
    const loss = mean(mine.map((st) => st.loss));
    const times = mine.map((st) => `${st.microBatches}: ${st.seconds.toFixed(3)}`).join('  ');
    console.log(
      `round ${String(round).padStart(3)}/${rounds} ${progressBar(round, rounds)}  loss ${loss.toFixed(3)}  held-out accuracy ${percent(test.accuracy).padStart(6)}  ` +
        `step seconds by micro-batches  ${times}${timed ? '' : '  (warm-up, not timed)'}`,
    );
  }
  await optimizer.dispose();
  await Promise.all(paramRRefs.map((r) => r.release()));
  await model.release();
  const records = s.splits.map((parts) => summarise(parts, s.batchSize, steps));
  const base = records[0]!;
  for (const r of records) {
    console.log(
      `micro-batches ${r.microBatches} (of ${r.microBatchSize} samples): throughput ${r.samplesPerSecond.toFixed(1)} samples/s, ` +
        `${(r.samplesPerSecond / base.samplesPerSecond).toFixed(2)}x of ${base.microBatches} (mean step ${r.meanStepSeconds.toFixed(3)} s: forward ${r.meanForwardSeconds.toFixed(3)}, ` +
        `backward ${r.meanBackwardSeconds.toFixed(3)}, optimizer ${r.meanOptimizerSeconds.toFixed(3)}; ` +
        `median step ${r.medianStepSeconds.toFixed(3)} s, ${r.medianSamplesPerSecond.toFixed(1)} samples/s, ${(r.medianSamplesPerSecond / base.medianSamplesPerSecond).toFixed(2)}x)`,
    );
  }
  const seconds = (performance.now() - started) / 1000;
  const files = writeReport(s.out, { backend: tensorBackend(), batchSize: s.batchSize, parameters, seconds, initialTest, settings: records, rounds: roundRecords, steps });
  const last = roundRecords[roundRecords.length - 1]!;
  console.log(`final held-out accuracy ${percent(last.testAccuracy)} (loss ${last.testLoss.toFixed(3)}) after ${steps.length} steps in ${seconds.toFixed(1)} s`);
  console.log(`results written to ${files.json} and ${files.svg}`);
  await agent.shutdown({ timeoutMs: 0 });
}

const s = settings(process.argv.slice(2));
const agent = await initRpc();
if (agent.self.name === 'master') {
  await runMaster(agent, s);
} else {
  console.log(`'${agent.self.name}' is ready to hold a shard (TensorFlow.js backend ${tensorBackend()})`);
  await agent.shutdown({ timeoutMs: 0 });
}
