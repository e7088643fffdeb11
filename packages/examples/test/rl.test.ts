import test from 'ava';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tf } from '@tensorbus/core';
import { CARTPOLE, CartPole, type CartPoleAction, type CartPoleState, type StepResult } from '../src/rl/cartpole.js';
import { countCommLines, isCommLine, RL_SOURCES } from '../src/rl/comm-lines.js';
import { Policy } from '../src/rl/policy.js';
import { discountedReturns, normalised } from '../src/rl/returns.js';
import { seededRandom } from '../src/common/random.js';
import { launchExample } from './run-examples.js';


/** Steps `env` with `choose` until the episode ends; returns the last result and the number of steps. */
function play(env: CartPole, choose: (s: CartPoleState, step: number) => CartPoleAction) {
  let state = env.step(choose(env.resetTo([0, 0, 0, 0]), 0));
  let steps = 1;
  while (!state.done) state = env.step(choose(state.state, steps++));
  return { last: state, steps };
}

test('rl - cartpole: one push from rest follows the cart-pole equations (Euler, tau 0.02)', (t) => {
  const env = new CartPole(seededRandom(1));
  env.resetTo([0, 0, 0, 0]);
  const { state, reward, done } = env.step(1);
  // temp = 10 / 1.1; thetaAcc = -temp / (0.5 * (4/3 - 0.1/1.1)); xAcc = temp - 0.05 * thetaAcc / 1.1
  const temp = 10 / 1.1;
  const thetaAcc = -temp / (0.5 * (4 / 3 - 0.1 / 1.1));
  const xAcc = temp - (0.05 * thetaAcc) / 1.1;
  t.deepEqual(state.map((v) => Number(v.toFixed(12))), [0, 0.02 * xAcc, 0, 0.02 * thetaAcc].map((v) => Number(v.toFixed(12))));
  t.is(reward, 1);
  t.false(done);
});

test('rl - cartpole: a pole that starts tilted falls the way it leans', (t) => {
  for (const lean of [0.05, -0.05]) {
    const env = new CartPole(seededRandom(1));
    env.resetTo([0, 0, lean, 0]);
    let result: StepResult;
    // Alternate the pushes, so no net force holds the pole up.
    let steps = 0;
    do result = env.step((steps++ % 2) as CartPoleAction);
    while (!result.done);
    t.true(result.terminated);
    t.is(Math.sign(result.state[2]), Math.sign(lean), `leaning ${lean} fell to ${result.state[2]}`);
    t.true(Math.abs(result.state[2]) > CARTPOLE.thetaThreshold);
    t.true(steps < 100, `fell after ${steps} steps`);
  }
});

test('rl - cartpole: an episode is truncated at 500 steps, and stepping on needs a reset', (t) => {
  const env = new CartPole(seededRandom(2));
  const balance = ([x, xDot, theta, thetaDot]: CartPoleState): CartPoleAction => (theta + 0.5 * thetaDot + 0.01 * x + 0.1 * xDot > 0 ? 1 : 0);
  const { last, steps } = play(env, balance);
  t.is(steps, 500);
  t.true(last.truncated);
  t.false(last.terminated);
  t.throws(() => env.step(0), { message: /reset/ });
  const pushRight = play(new CartPole(seededRandom(2)), () => 1);
  t.true(pushRight.last.terminated && pushRight.steps < 50, 'always pushing one way ends the episode early');
});

test('rl - cartpole: seeded start states are reproducible and small', (t) => {
  const a = new CartPole(seededRandom(5)).reset();
  const b = new CartPole(seededRandom(5)).reset();
  t.deepEqual(a, b);
  t.true(a.every((v) => Math.abs(v) <= 0.05));
  t.notDeepEqual(a, new CartPole(seededRandom(6)).reset());
});

test('rl - returns: discounted and normalised', (t) => {
  t.deepEqual(discountedReturns([1, 1, 1], 0.5), [1.75, 1.5, 1]);
  const n = normalised([1, 2, 3, 4]);
  t.true(Math.abs(n.reduce((a, b) => a + b, 0)) < 1e-9);
  const std = Math.sqrt(n.reduce((a, b) => a + b * b, 0) / (n.length - 1));
  t.true(Math.abs(std - 1) < 1e-5);
});

test('rl - policy: a REINFORCE step makes a rewarded action more likely and a punished one less', (t) => {
  const tensorsBefore = tf.memory().numTensors;
  const policy = new Policy(3, 1e-2);
  const state = [0.01, -0.02, 0.03, 0.01];
  const before = policy.probabilities(state)[1]!;
  policy.update([state, state], [1, 1], [1, 1]);
  const rewarded = policy.probabilities(state)[1]!;
  policy.update([state, state, state], [1, 1, 1], [-1, -1, -1]);
  policy.update([state, state, state], [1, 1, 1], [-1, -1, -1]);
  const punished = policy.probabilities(state)[1]!;
  policy.dispose();
  t.is(tf.memory().numTensors, tensorsBefore, 'no tensor is left behind');
  t.true(rewarded > before, `${before} -> ${rewarded}`);
  t.true(punished < rewarded, `${rewarded} -> ${punished}`);
});

test('rl - communication lines: every line that uses the tensorbus API is marked and counted', (t) => {
  const api = /\b(initRpc|currentAgent|remoteClass|remoteFunction|RpcFuture|rpcSync|rpcAsync|rpcStream|toHere|release|shutdown|getWorkerInfo|workers|rref|remote)\s*[(.]|\.self\b|@tensorbus\/actors'/;
  const unmarked: string[] = [];
  let marked = 0;
  for (const file of readdirSync(RL_SOURCES).filter((f) => f.endsWith('.ts'))) {
    readFileSync(join(RL_SOURCES, file), 'utf8').split('\n').forEach((line, i) => {
      const code = line.trim();
      if (isCommLine(line)) marked++;
      else if (api.test(code) && !code.startsWith('*') && !code.startsWith('//') && !code.startsWith('/**') && !code.startsWith('import type')) {
        unmarked.push(`${file}:${i + 1}: ${code}`);
      }
    });
  }
  t.deepEqual(unmarked, []);
  t.is(countCommLines()?.total, marked);
  t.true(marked > 0);
});

test('rl - agent and 2 observers over RPC: REINFORCE on CartPole improves the reward', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'tb-rl-'));
  const started = Date.now();
  const { code, stdout } = await launchExample(['agent', 'observer1', 'observer2'], 'rl/main.js', ['--max-episodes', '30', '--seed', '1', '--out', out]);
  t.log(`launch took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.is(code, 0, stdout);
  t.regex(stdout, /\[agent\s*\] episode\s+30 {2}last reward\s+\d+ \(mean\s+[\d.]+\) {2}running reward\s+[\d.]+ \[[#.]+\]/, 'progress is shown per episode round');
  t.regex(stdout, /stopped after 30 episode rounds/);
  const result = JSON.parse(readFileSync(join(out, 'rl.json'), 'utf8')) as {
    observers: number;
    episodes: number;
    commLines: { total: number };
    steps: number;
    stepsPerSecond: number;
    seconds: number;
    curve: Array<{ episode: number; meanReward: number; minReward: number; runningReward: number }>;
  };
  t.is(result.observers, 2);
  t.is(result.episodes, 30);
  t.is(result.curve.length, 30);
  const mean = (points: typeof result.curve) => points.reduce((a, p) => a + p.meanReward, 0) / points.length;
  const first = mean(result.curve.slice(0, 10));
  const last = mean(result.curve.slice(-10));
  t.true(last > 1.5 * first && last > first + 15, `mean reward of the first 10 rounds ${first.toFixed(1)}, of the last 10 ${last.toFixed(1)}`);
  t.is(result.commLines.total, countCommLines()!.total);
  // CartPole pays 1 per step, so the rounds' rewards count the steps; the example prints their rate itself.
  t.is(result.steps, Math.round(result.curve.reduce((a, p) => a + p.meanReward * result.observers, 0)));
  t.true(Math.abs(result.stepsPerSecond - result.steps / result.seconds) < 1e-6);
  t.regex(stdout, new RegExp(`${result.steps.toLocaleString('en-US')} environment steps, ${(2 * result.steps).toLocaleString('en-US')} calls to the agent: ${Math.round(result.stepsPerSecond)} steps/s`));
  t.regex(stdout, new RegExp(`communication code: ${result.commLines.total} lines`));
  t.true(existsSync(join(out, 'rl.svg')));
  t.regex(readFileSync(join(out, 'rl.svg'), 'utf8'), /running reward/);
});

test('rl - --max-seconds ends training with the first round that ends after that many seconds; a bad value is refused', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'tb-rl-'));
  const { code, stdout } = await launchExample(['agent', 'observer1'], 'rl/main.js', ['--max-seconds', '1.5', '--max-episodes', '100000', '--out', out]);
  t.is(code, 0, stdout);
  const { curve } = JSON.parse(readFileSync(join(out, 'rl.json'), 'utf8')) as { curve: Array<{ seconds: number }> };
  t.true(curve.length >= 2, `${curve.length} rounds`);
  t.true(curve.at(-1)!.seconds >= 1.5, `the last round ended at ${curve.at(-1)!.seconds} s`);
  t.true(curve.at(-2)!.seconds < 1.5, `the round before it ended at ${curve.at(-2)!.seconds} s`);
  const refused = await launchExample(['agent', 'observer1'], 'rl/main.js', ['--max-seconds', 'soon', '--out', out]);
  t.not(refused.code, 0);
  t.regex(refused.stdout + refused.stderr, /--max-seconds must be a number of seconds above 0, got soon/);
});
