/**
 * The model split across two workers, driven from the master [the tutorial's
 * DistResNet50]: a batch is cut into micro-batches; each goes through the
 * first shard with `remote()` (its activations stay on that worker, as an
 * RRef) and on to the second with `rpcAsync()`, which fetches them from the
 * first shard directly. Nothing waits between micro-batches, so while the
 * second shard works on micro-batch i the first already works on i + 1.
 * The logits of all micro-batches are concatenated on the master.
 * @module
 */
import { RpcFuture, tf } from '@tensorbus/core';
import { RemoteModule, type RpcAgent, type RRef } from '@tensorbus/actors';
import type * as TfNamespace from '@tensorflow/tfjs';
import { InputShard, OutputShard } from './shards.js';

type Tensor = TfNamespace.Tensor;

/** The layer sizes of both shards. */
export interface ModelShape {
  /** Pixels per image. */
  inputs: number;
  /** Hidden layer sizes of the first shard. */
  hidden1: number[];
  /** Hidden layer sizes of the second shard. */
  hidden2: number[];
  classes: number;
}

/** Sizes of `parts` micro-batches of a batch of `count` rows, as even as possible. */
export function microBatchSizes(count: number, parts: number): number[] {
  const n = Math.max(1, Math.min(parts, count));
  return Array.from({ length: n }, (_, i) => Math.floor(count / n) + (i < count % n ? 1 : 0));
}

/**
 * `x` cut into blocks of `sizes` rows, from one read of its values. (On the
 * WebAssembly backend `tf.split` reads the whole of `x` once per block: a
 * batch of 2.3 MB cut in 4 is 9.2 MB of copies a step, garbage that can set
 * off a full collection in the master at every step; see docs/performance.md.)
 */
function rowBlocks(x: Tensor, sizes: number[]): Tensor[] {
  const [, ...rowShape] = x.shape;
  const rowLength = rowShape.reduce((a, b) => a * b, 1);
  const values = x.dataSync() as Int32Array | Float32Array;
  let start = 0;
  return sizes.map((rows) => {
    const block = tf.tensor(values.subarray(start * rowLength, (start + rows) * rowLength), [rows, ...rowShape], x.dtype);
    start += rows;
    return block;
  });
}

/**
 * A classifier whose two halves live on two workers.
 *
 * @example
 * ```ts
 * const model = await PipelinedClassifier.create(agent, ['shard1', 'shard2'], shape);
 * const opt = await DistributedOptimizer.create(agent, 'adam', await model.parameterRRefs(), { learningRate: 1e-3 });
 * await agent.distAutograd.context(async (ctxId) => {
 *   const logits = await model.forward(pixels, 4);
 *   await agent.distAutograd.backward(ctxId, [lossOf(logits)]);
 *   await opt.step(ctxId);
 * });
 * ```
 */
export class PipelinedClassifier {
  /** Releases of past forwards' references still in flight. */
  private readonly releasing = new Set<Promise<void>>();

  private constructor(
    private readonly agent: RpcAgent,
    private readonly shard1: RemoteModule<InstanceType<typeof InputShard>>,
    private readonly shard2: RemoteModule<InstanceType<typeof OutputShard>>,
  ) {}

  /** Builds the first half on `workers[0]` and the second on `workers[1]`. */
  static async create(agent: RpcAgent, workers: [string, string], shape: ModelShape, seed = 1): Promise<PipelinedClassifier> {
    const [shard1, shard2] = await Promise.all([
      RemoteModule.create(agent, workers[0], InputShard, [[shape.inputs, ...shape.hidden1], seed]),
      RemoteModule.create(agent, workers[1], OutputShard, [[shape.hidden1[shape.hidden1.length - 1] ?? shape.inputs, ...shape.hidden2, shape.classes], seed + 100]),
    ]);
    return new PipelinedClassifier(agent, shard1, shard2);
  }

  /**
   * Logits of `pixels` [n, inputs] (int32, 0..255), computed in `parts`
   * micro-batches flowing through the two shards. Inside an autograd context
   * every call is recorded, so a backward from the result reaches both shards.
   */
  async forward(pixels: Tensor, parts: number): Promise<Tensor> {
    const chunks = rowBlocks(pixels, microBatchSizes(pixels.shape[0]!, parts));
    const refs: Array<RRef<unknown>> = [];
    const outputs: Array<RpcFuture<Tensor>> = [];
    for (const chunk of chunks) {
      const xRef = this.agent.rref(chunk);
      const yRef = this.shard1.getModuleRRef().remote().forward(xRef);
      outputs.push(this.shard2.getModuleRRef().rpcAsync().forward(yRef));
      refs.push(xRef, yRef);
    }
    try {
      const logits = await RpcFuture.all(outputs);
      const all = tf.concat(logits, 0);
      tf.dispose(logits);
      return all;
    } finally {
      // Drop this worker's references without waiting (as Python drops them when they go out of
      // scope): the owners free the values once the acknowledgements are in, and the autograd
      // context keeps what backward needs. release() waits for these.
      for (const ref of refs) this.releaseLater(ref);
    }
  }

  private releaseLater(ref: RRef<unknown>): void {
    const done: Promise<void> = ref
      .release()
      .catch(() => undefined)
      .finally(() => this.releasing.delete(done));
    this.releasing.add(done);
  }

  /** RRefs to every parameter of both shards [the tutorial's parameter_rrefs]. */
  async parameterRRefs(): Promise<Array<RRef<TfNamespace.Variable>>> {
    const [first, second] = await Promise.all([this.shard1.remoteParameters(), this.shard2.remoteParameters()]);
    return [...first, ...second];
  }

  /** Waits for the references of past forwards to be released, then releases both shards. */
  async release(): Promise<void> {
    await Promise.all([...this.releasing]);
    await Promise.all([this.shard1.release(), this.shard2.release()]);
  }
}
