/**
 * The model-parallel RNN [the tutorial's `RNNModel`]: the embedding table and
 * the decoder are `RemoteModule`s on the parameter server, the LSTM runs
 * here on the trainer. A forward pass is remote embedding → local LSTM →
 * remote decoder; inside a distributed autograd context, backward reaches
 * all three. `parameterRRefs()` gathers RRefs to every parameter, remote and
 * local, for one `DistributedOptimizer`.
 * @module
 */
import { tf } from '@tensorbus/core';
import { RemoteModule, type RpcAgent, type RRef } from '@tensorbus/actors';
import { Lstm, type LstmState } from './lstm.js';
import { Decoder, EmbeddingTable } from './remote-modules.js';

/** Sizes of the model. */
export interface ModelConfig {
  /** Vocabulary size. */
  ntoken: number;
  /** Embedding size. */
  ninp: number;
  /** LSTM units. */
  nhid: number;
  /** Dropout rate on the embeddings and on the LSTM's outputs, while training. */
  dropout: number;
  seed: number;
}

export type { LstmState } from './lstm.js';

/** What a forward pass gives. */
export interface ForwardResult {
  /** Logits [batch, time, ntoken]. */
  logits: tf.Tensor;
  /** The LSTM's state after the last word. */
  state: LstmState;
  /**
   * The embeddings received and the LSTM outputs sent: inside an autograd
   * context they are part of the graph, so dispose them after backward.
   */
  intermediates: tf.Tensor[];
}

/** Embedding and decoder on `ps`, LSTM here. */
export class RNNModel {
  private constructor(
    private readonly agent: RpcAgent,
    readonly config: ModelConfig,
    readonly embedding: RemoteModule<InstanceType<typeof EmbeddingTable>>,
    readonly lstm: Lstm,
    readonly decoder: RemoteModule<InstanceType<typeof Decoder>>,
  ) {}

  /** Creates the embedding table and the decoder on worker `ps` and the LSTM here. */
  static async create(agent: RpcAgent, ps: string, config: ModelConfig): Promise<RNNModel> {
    const { ntoken, ninp, nhid, dropout, seed } = config;
    const [embedding, decoder] = await Promise.all([
      RemoteModule.create(agent, ps, EmbeddingTable, [ntoken, ninp, dropout, seed]),
      RemoteModule.create(agent, ps, Decoder, [nhid, ntoken, dropout, seed + 1]),
    ]);
    return new RNNModel(agent, config, embedding, new Lstm(ninp, nhid, seed + 2), decoder);
  }

  /** A zero state for `batch` sequences [init_hidden]. */
  initState(batch: number): LstmState {
    return this.lstm.zeroState(batch);
  }

  /**
   * Logits for word ids `ids` [batch, time] (int32), starting the LSTM from
   * `state` (which stays the caller's), with dropout when `training`. Inside
   * a context the state counts as a constant, as `hidden.detach_()` makes it
   * in the tutorial.
   */
  async forward(ids: tf.Tensor, state: LstmState, training = false): Promise<ForwardResult> {
    const embedded = await this.embedding.forward(ids, training);
    const { output, state: next } = this.lstm.apply(embedded, state);
    const logits = await this.decoder.forward(output, training);
    return { logits, state: next, intermediates: [embedded, output] };
  }

  /**
   * RRefs to every parameter [parameter_rrefs]: the remote modules'
   * (owned by the parameter server) and the LSTM's (owned here, `RRef(param)`
   * in the tutorial).
   */
  async parameterRRefs(): Promise<Array<RRef<tf.Variable>>> {
    const [embedding, decoder] = await Promise.all([this.embedding.remoteParameters(), this.decoder.remoteParameters()]);
    return [...embedding, ...this.lstm.parameters().map((v) => this.agent.rref(v)), ...decoder];
  }

  /**
   * Frees the remote modules' weights on the parameter server and releases
   * them, and disposes the LSTM. (Releasing alone would leave the weights to
   * the garbage collector of the parameter server's process.)
   */
  async release(): Promise<void> {
    await Promise.all(
      [this.embedding, this.decoder].map(async (module) => {
        await module.getModuleRRef().rpcSync().dispose();
        await module.release();
      }),
    );
    this.lstm.dispose();
  }
}
