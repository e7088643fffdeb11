/**
 * The policy network of the tutorial (4 -> 128 -> 2, ReLU, softmax over the
 * two actions) as TensorFlow.js variables, and its REINFORCE update with Adam.
 *
 * PyTorch keeps each step's `log_prob` with its autograd graph until the
 * episode ends; TensorFlow.js has no persistent tape, so the agent keeps the
 * states and the actions taken, and the update recomputes their log
 * probabilities under `tf.variableGrads`. The parameters do not change during
 * an episode, so this gives the same gradient. (The tutorial's dropout layer is
 * left out: recomputing would need each step's dropout mask, and the policy
 * learns CartPole without it.)
 * @module
 */
import { tf } from '@tensorbus/core';
import type * as TfNamespace from '@tensorflow/tfjs';

type Tensor = TfNamespace.Tensor;

/** Sizes of the network. */
const POLICY_SHAPE = { inputs: 4, hidden: 128, actions: 2 } as const;

/**
 * A softmax policy over CartPole's actions.
 *
 * @example
 * ```ts
 * const policy = new Policy(1, 1e-2);
 * const [left, right] = policy.probabilities([0, 0, 0.01, 0]);
 * policy.update([[0, 0, 0.01, 0]], [1], [1]);   // makes action 1 there more likely
 * ```
 */
export class Policy {
  private readonly params: TfNamespace.Variable[];
  private readonly optimizer: TfNamespace.Optimizer;

  /** Weights initialised as PyTorch's `nn.Linear` does (uniform within ±1/sqrt(fan-in)), from `seed`. */
  constructor(seed: number, learningRate: number) {
    const { inputs, hidden, actions } = POLICY_SHAPE;
    const uniform = (shape: number[], fanIn: number, s: number, name: string) =>
      tf.tidy(() => tf.variable(tf.randomUniform(shape, -1 / Math.sqrt(fanIn), 1 / Math.sqrt(fanIn), 'float32', s), true, name));
    this.params = [
      uniform([inputs, hidden], inputs, seed, `rl.w1.${seed}`),
      uniform([hidden], inputs, seed + 1, `rl.b1.${seed}`),
      uniform([hidden, actions], hidden, seed + 2, `rl.w2.${seed}`),
      uniform([actions], hidden, seed + 3, `rl.b2.${seed}`),
    ];
    this.optimizer = tf.train.adam(learningRate);
  }

  private logits(states: Tensor): Tensor {
    const [w1, b1, w2, b2] = this.params as unknown as [Tensor, Tensor, Tensor, Tensor];
    return tf.add(tf.matMul(tf.relu(tf.add(tf.matMul(states, w1), b1)), w2), b2);
  }

  /** The probability of each action in `state`. */
  probabilities(state: readonly number[]): number[] {
    return tf.tidy(() => Array.from(tf.softmax(this.logits(tf.tensor2d([state as number[]]))).dataSync()));
  }

  /**
   * One REINFORCE step: minimises `sum_t -log pi(actions[t] | states[t]) * weights[t]`
   * (the weights are the normalised discounted returns). Returns the loss.
   */
  update(states: number[][], actions: number[], weights: number[]): number {
    const loss = tf.tidy(() => {
      const x = tf.tensor2d(states, [states.length, POLICY_SHAPE.inputs]);
      const taken = tf.oneHot(tf.tensor1d(actions, 'int32'), POLICY_SHAPE.actions);
      const w = tf.tensor1d(weights);
      return this.optimizer.minimize(() => {
        const logProbs = tf.sum(tf.mul(tf.logSoftmax(this.logits(x)), taken), 1);
        return tf.sum(tf.neg(tf.mul(logProbs, w))) as TfNamespace.Scalar;
      }, true, this.params)!;
    });
    const value = loss.dataSync()[0]!;
    loss.dispose();
    return value;
  }

  /** Frees the variables and the optimizer's state. */
  dispose(): void {
    this.optimizer.dispose();
    tf.dispose(this.params);
  }
}
