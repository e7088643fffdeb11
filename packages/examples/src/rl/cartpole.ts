/**
 * The classic cart-pole balancing task (Barto, Sutton & Anderson 1983) with
 * the constants and explicit Euler integration of OpenAI Gym's CartPole-v1:
 * push the cart left or right, reward 1 per step, the episode ends when the
 * pole leans past 12 degrees, the cart leaves [-2.4, 2.4], or after 500 steps.
 * @module
 */

/** `[x, xDot, theta, thetaDot]`: cart position and velocity, pole angle (radians, 0 upright) and angular velocity. */
export type CartPoleState = [number, number, number, number];

/** 0 pushes the cart left, 1 pushes it right. */
export type CartPoleAction = 0 | 1;

/** What one step returns. */
export interface StepResult {
  state: CartPoleState;
  reward: number;
  /** The pole fell or the cart left the track. */
  terminated: boolean;
  /** The step limit was reached with the pole still up. */
  truncated: boolean;
  /** `terminated || truncated`: reset before stepping again. */
  done: boolean;
}

/** The physical constants of CartPole-v1. */
export const CARTPOLE = {
  gravity: 9.8,
  cartMass: 1.0,
  poleMass: 0.1,
  /** Half the pole's length (metres). */
  halfLength: 0.5,
  forceMagnitude: 10.0,
  /** Seconds between state updates. */
  tau: 0.02,
  thetaThreshold: (12 * 2 * Math.PI) / 360,
  xThreshold: 2.4,
  /** CartPole-v1's episode limit. */
  maxSteps: 500,
  /** CartPole-v1's reward threshold: "solved" above this running reward. */
  rewardThreshold: 475,
} as const;

/**
 * One cart-pole environment. Start states are drawn from `random` (uniform in
 * [-0.05, 0.05] for each component), so a seeded generator gives the same
 * episodes on every run.
 *
 * @example
 * ```ts
 * const env = new CartPole(seededRandom(1));
 * let state = env.reset();
 * for (let done = false; !done; ) ({ state, done } = env.step(state[2] > 0 ? 1 : 0));
 * ```
 */
export class CartPole {
  private state: CartPoleState = [0, 0, 0, 0];
  private steps = 0;
  private finished = true;

  constructor(private readonly random: () => number, private readonly maxSteps: number = CARTPOLE.maxSteps) {}

  /** Starts an episode; returns the first state. */
  reset(): CartPoleState {
    this.state = [0, 0, 0, 0].map(() => this.random() * 0.1 - 0.05) as CartPoleState;
    this.steps = 0;
    this.finished = false;
    return [...this.state];
  }

  /** Starts an episode from a given state (for tests and demonstrations). */
  resetTo(state: CartPoleState): CartPoleState {
    this.state = [...state];
    this.steps = 0;
    this.finished = false;
    return [...this.state];
  }

  /** Applies `action` for one time step of `tau` seconds. */
  step(action: CartPoleAction): StepResult {
    if (this.finished) throw new Error('CartPole.step() after the episode ended: call reset() first');
    if (action !== 0 && action !== 1) throw new Error(`CartPole action must be 0 or 1, got ${String(action)}`);
    const { gravity, cartMass, poleMass, halfLength, forceMagnitude, tau } = CARTPOLE;
    const totalMass = cartMass + poleMass;
    const poleMassLength = poleMass * halfLength;
    const [x, xDot, theta, thetaDot] = this.state;
    const force = action === 1 ? forceMagnitude : -forceMagnitude;
    const cos = Math.cos(theta);
    const sin = Math.sin(theta);
    // Equations of motion of the cart-pole (Florian 2007, without friction).
    const temp = (force + poleMassLength * thetaDot * thetaDot * sin) / totalMass;
    const thetaAcc = (gravity * sin - cos * temp) / (halfLength * (4 / 3 - (poleMass * cos * cos) / totalMass));
    const xAcc = temp - (poleMassLength * thetaAcc * cos) / totalMass;
    // Explicit Euler, positions from the old velocities (Gym's 'euler' integrator).
    this.state = [x + tau * xDot, xDot + tau * xAcc, theta + tau * thetaDot, thetaDot + tau * thetaAcc];
    this.steps++;
    const [nx, , nTheta] = this.state;
    const terminated = Math.abs(nx) > CARTPOLE.xThreshold || Math.abs(nTheta) > CARTPOLE.thetaThreshold;
    const truncated = !terminated && this.steps >= this.maxSteps;
    this.finished = terminated || truncated;
    return { state: [...this.state], reward: 1, terminated, truncated, done: this.finished };
  }
}
