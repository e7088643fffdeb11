/**
 * The return computations of REINFORCE: discounted returns of one episode's
 * rewards, and their normalisation to zero mean and unit variance (which the
 * tutorial uses as a baseline, to lower the gradient's variance).
 * @module
 */

/** `G_t = r_t + gamma * G_{t+1}` for each step of one episode. */
export function discountedReturns(rewards: readonly number[], gamma: number): number[] {
  const out = new Array<number>(rewards.length);
  let g = 0;
  for (let t = rewards.length - 1; t >= 0; t--) out[t] = g = rewards[t]! + gamma * g;
  return out;
}

/** `(v - mean) / (std + eps)`, with the unbiased standard deviation as `torch.std` computes it. */
export function normalised(values: readonly number[], eps = 1.1920928955078125e-7): number[] {
  const n = values.length;
  if (n === 0) return [];
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const variance = n > 1 ? values.reduce((a, b) => a + (b - mean) ** 2, 0) / (n - 1) : 0;
  const std = Math.sqrt(variance);
  return values.map((v) => (v - mean) / (std + eps));
}
