/**
 * The agent of the RL example [the tutorial's `Agent`]: it holds the policy,
 * makes one remote `Observer` on each observer worker, and in each episode
 * round has all observers play an episode at once. Observers call back into
 * the agent through its RRef for every action (`selectAction`) and reward
 * (`reportReward`); the agent keeps each observer's trajectory and, after the
 * round, makes one REINFORCE update from all of them (`finishEpisode`).
 *
 * Lines ending in `// comm` are the example's communication code (counted by
 * main.ts and kept honest by the test).
 * @module
 */
import { RpcFuture } from '@tensorbus/core'; // comm
import type { RpcAgent, RRef } from '@tensorbus/actors';
import { seededRandom } from '../common/random.js';
import type { CartPoleAction, CartPoleState } from './cartpole.js';
import { Observer, type Policymaker } from './observer.js';
import { Policy } from './policy.js';
import { discountedReturns, normalised } from './returns.js';

/** Settings of the learner. */
export interface AgentOptions {
  seed: number;
  learningRate: number;
  gamma: number;
}

/** What one episode round gave. */
export interface RoundResult {
  /** The smallest episode reward of the round's observers (the tutorial's `last reward`). */
  minReward: number;
  /** The mean episode reward of the round's observers. */
  meanReward: number;
  /** Each observer's episode reward, by observer id. */
  rewards: number[];
  /** The REINFORCE loss of the update. */
  loss: number;
  /** Environment steps of the round, all observers: each was one `selectAction` and one `reportReward` call to the agent. */
  steps: number;
}

interface Trajectory {
  states: CartPoleState[];
  actions: CartPoleAction[];
  rewards: number[];
  /** Draws this observer's actions: one stream per observer keeps runs reproducible however calls interleave. */
  random: () => number;
}

/**
 * The learner. Construct it on the agent worker with the observer workers'
 * names; it registers itself as an RRef to hand to the observers.
 */
export class Agent implements Policymaker {
  private readonly selfRRef: RRef<Agent>;
  private readonly observerRRefs: Array<RRef<Observer>>;
  private readonly trajectories = new Map<number, Trajectory>();
  private readonly policy: Policy;

  constructor(rpc: RpcAgent, observerNames: string[], private readonly options: AgentOptions) {
    this.policy = new Policy(options.seed, options.learningRate);
    this.selfRRef = rpc.rref(this); // comm
    this.observerRRefs = observerNames.map((name) => rpc.remote(name, Observer, [options.seed])); // comm
    for (const name of observerNames) {
      const id = rpc.getWorkerInfo(name).id; // comm
      this.trajectories.set(id, { states: [], actions: [], rewards: [], random: seededRandom(options.seed * 104729 + id) });
    }
  }

  /** Samples an action for observer `observerId` in `state`, and records it (called by observers through the RRef). */
  selectAction(observerId: number, state: CartPoleState): CartPoleAction {
    const trajectory = this.trajectory(observerId);
    const [pLeft] = this.policy.probabilities(state);
    const action: CartPoleAction = trajectory.random() < pLeft! ? 0 : 1;
    trajectory.states.push(state);
    trajectory.actions.push(action);
    return action;
  }

  /** Records the reward observer `observerId` got for its last action (called by observers through the RRef). */
  reportReward(observerId: number, reward: number): void {
    this.trajectory(observerId).rewards.push(reward);
  }

  /** Has every observer play one episode of at most `nSteps` steps, all at once; resolves when all have finished. */
  async runEpisode(nSteps: number): Promise<void> {
    const futures = this.observerRRefs.map((ob) => ob.rpcAsync().runEpisode(this.selfRRef, nSteps)); // comm
    await RpcFuture.all(futures); // comm
  }

  /**
   * Updates the policy from the round's trajectories (REINFORCE: discounted
   * returns per observer episode, normalised over the round) and clears them.
   */
  finishEpisode(): RoundResult {
    const states: CartPoleState[] = [];
    const actions: CartPoleAction[] = [];
    const returns: number[] = [];
    const rewards: number[] = [];
    for (const [, t] of [...this.trajectories].sort(([a], [b]) => a - b)) {
      if (t.rewards.length !== t.actions.length) throw new Error(`an observer reported ${t.rewards.length} rewards for ${t.actions.length} actions`);
      states.push(...t.states);
      actions.push(...t.actions);
      returns.push(...discountedReturns(t.rewards, this.options.gamma));
      rewards.push(t.rewards.reduce((a, b) => a + b, 0));
      t.states = [];
      t.actions = [];
      t.rewards = [];
    }
    const loss = this.policy.update(states, actions, normalised(returns));
    return {
      minReward: Math.min(...rewards),
      meanReward: rewards.reduce((a, b) => a + b, 0) / rewards.length,
      rewards,
      loss,
      steps: actions.length,
    };
  }

  /** Releases the observers and the agent's own RRef, and frees the policy. */
  async close(): Promise<void> {
    await Promise.all([...this.observerRRefs, this.selfRRef].map((r) => r.release())); // comm
    this.policy.dispose();
  }

  private trajectory(observerId: number): Trajectory {
    const trajectory = this.trajectories.get(observerId);
    if (!trajectory) throw new Error(`no observer with id ${observerId}`);
    return trajectory;
  }
}
