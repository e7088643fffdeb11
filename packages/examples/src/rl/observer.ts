/**
 * The observer of the RL example: a remote object made by the agent on each
 * observer worker, holding its own CartPole. When the agent asks it to run an
 * episode, it sends each state to the agent through the agent's RRef and
 * applies the action it gets back, then reports the reward, as the tutorial's
 * `Observer.run_episode` does (two explicit calls per step, kept apart for
 * clarity as the tutorial keeps them).
 *
 * Lines ending in `// comm` are the example's communication code (counted by
 * main.ts and kept honest by the test).
 * @module
 */
import { currentAgent, remoteClass, type RRef } from '@tensorbus/actors'; // comm
import { seededRandom } from '../common/random.js';
import { CartPole, type CartPoleAction, type CartPoleState } from './cartpole.js';

class CartPoleObserver {
  /** This observer's worker id [rpc.get_worker_info().id]. */
  readonly id: number;
  private readonly env: CartPole;

  /** Runs on the observer worker; the environment's start states are seeded by `seed` and the worker id. */
  constructor(seed: number) {
    this.id = currentAgent().self.id; // comm
    this.env = new CartPole(seededRandom(seed * 7919 + this.id));
  }

  /**
   * Plays one episode of at most `nSteps` steps, asking the agent for each
   * action; resolves with the episode's total reward.
   */
  async runEpisode(agentRRef: RRef<Policymaker>, nSteps: number): Promise<number> {
    try {
      let state = this.env.reset();
      let total = 0;
      for (let step = 0; step < nSteps; step++) {
        const action = await agentRRef.rpcSync().selectAction(this.id, state); // comm
        const result = this.env.step(action);
        await agentRRef.rpcSync().reportReward(this.id, result.reward); // comm
        total += result.reward;
        state = result.state;
        if (result.done) break;
      }
      return total;
    } finally {
      await agentRRef.release(); // comm
    }
  }
}

/** What an observer asks of the agent it plays for (the agent in agent.ts). */
export interface Policymaker {
  /** The action for observer `observerId` in `state`. */
  selectAction(observerId: number, state: CartPoleState): CartPoleAction;
  /** The reward observer `observerId` got for its last action. */
  reportReward(observerId: number, reward: number): void;
}

/** The observer class, constructed remotely with `agent.remote(name, Observer, [seed])`. */
export const Observer = remoteClass('rl.Observer', CartPoleObserver); // comm
/** An observer instance (what an `RRef<Observer>` refers to). */
export type Observer = CartPoleObserver;
