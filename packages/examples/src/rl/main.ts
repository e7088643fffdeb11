/**
 * The reinforcement-learning example [PyTorch's "Distributed Reinforcement
 * Learning using RPC and RRef"]: one agent with a policy network, N observers
 * each playing CartPole-v1, actions chosen by the agent over RPC through RRefs.
 * Run through the launcher:
 *
 *   tensorbus launch -n 5 --names agent,observer1,observer2,observer3,observer4 main.js
 *     [--max-episodes 500] [--max-seconds S] [--seed 1] [--lr 0.01] [--gamma 0.99] [--steps 500] [--out out]
 *
 * The agent prints each episode round (the smallest episode reward of the
 * round, as the tutorial does, and the running reward toward 475), stops when
 * the running reward passes 475, after `--max-episodes` rounds, or at the end
 * of the first round that ends `--max-seconds` after training started, and writes
 * `out/rl.svg` and `out/rl.json`.
 *
 * Lines ending in `// comm` are the example's communication code (counted at
 * the end of the run and kept honest by the test).
 * @module
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { tensorBackend } from '@tensorbus/core';
import { initRpc, type RpcAgent } from '@tensorbus/actors'; // comm
import { progressBar } from '../common/progress.js';
import { writeChart } from '../common/svg-chart.js';
import { Agent } from './agent.js';
import { CARTPOLE } from './cartpole.js';
import { countCommLines } from './comm-lines.js';
import { flagReader } from '../common/args.js';

interface Settings {
  maxEpisodes: number;
  /** Rounds start only this long after training started, s (Infinity: no limit). */
  maxSeconds: number;
  seed: number;
  learningRate: number;
  gamma: number;
  steps: number;
  out: string;
}

function settings(argv: string[]): Settings {
  const value = flagReader(argv);
  const maxSeconds = Number(value('--max-seconds', 'Infinity'));
  if (!(maxSeconds > 0)) throw new Error(`--max-seconds must be a number of seconds above 0, got ${value('--max-seconds', '')}`);
  return {
    maxEpisodes: Number(value('--max-episodes', '500')),
    maxSeconds,
    seed: Number(value('--seed', '1')),
    learningRate: Number(value('--lr', '0.01')),
    gamma: Number(value('--gamma', '0.99')),
    steps: Number(value('--steps', String(CARTPOLE.maxSteps))),
    out: resolve(value('--out', 'out')),
  };
}

interface Point {
  episode: number;
  minReward: number;
  meanReward: number;
  runningReward: number;
  seconds: number;
}

async function runAgent(rpc: RpcAgent, s: Settings): Promise<void> {
  const observers = rpc.workers().filter((w) => w.name !== rpc.self.name).sort((a, b) => a.id - b.id).map((w) => w.name); // comm
  const threshold = CARTPOLE.rewardThreshold;
  console.log(`agent: ${observers.length} observers (${observers.join(', ')}), CartPole-v1, up to ${s.maxEpisodes} episode rounds, seed ${s.seed}, TensorFlow.js backend ${tensorBackend()}`);
  const agent = new Agent(rpc, observers, { seed: s.seed, learningRate: s.learningRate, gamma: s.gamma });
  const started = Date.now();
  const curve: Point[] = [];
  let running = 0;
  let solved = false;
  let steps = 0;
  // When the last round ended: both the curve's time and the --max-seconds check (a second reading could pass the limit the curve did not).
  let elapsedMs = 0;
  for (let episode = 1; episode <= s.maxEpisodes && !solved && elapsedMs < s.maxSeconds * 1000; episode++) {
    await agent.runEpisode(s.steps);
    const round = agent.finishEpisode();
    steps += round.steps;
    running = 0.05 * round.minReward + 0.95 * running;
    solved = running > threshold;
    elapsedMs = Date.now() - started;
    curve.push({ episode, minReward: round.minReward, meanReward: round.meanReward, runningReward: running, seconds: elapsedMs / 1000 });
    console.log(
      `episode ${String(episode).padStart(4)}  last reward ${round.minReward.toFixed(0).padStart(3)} (mean ${round.meanReward.toFixed(1).padStart(5)})` +
        `  running reward ${running.toFixed(2).padStart(6)} ${progressBar(Math.max(0, running), threshold)}`,
    );
  }
  const seconds = (Date.now() - started) / 1000;
  await agent.close();
  const comm = countCommLines();
  mkdirSync(s.out, { recursive: true });
  const summary = {
    observers: observers.length,
    seed: s.seed,
    learningRate: s.learningRate,
    gamma: s.gamma,
    backend: tensorBackend(),
    episodes: curve.length,
    solved,
    threshold,
    finalRunningReward: running,
    seconds,
    steps,
    stepsPerSecond: steps / seconds,
    commLines: comm ?? null,
    curve,
  };
  writeFileSync(join(s.out, 'rl.json'), JSON.stringify(summary, null, 2));
  const chart = writeChart(join(s.out, 'rl.svg'), {
    title: `REINFORCE on CartPole-v1: 1 agent, ${observers.length} observers over RPC`,
    xLabel: 'episode round',
    yLabel: 'reward',
    xAxis: { integer: true },
    series: [
      { label: 'episode reward (mean of observers)', points: curve.map((c) => [c.episode, c.meanReward]) },
      { label: 'last reward (smallest of observers)', points: curve.map((c) => [c.episode, c.minReward]) },
      { label: 'running reward', points: curve.map((c) => [c.episode, c.runningReward]) },
      { label: `threshold ${threshold}`, points: [[1, threshold], [Math.max(1, curve.length), threshold]] },
    ],
  });
  console.log(
    solved
      ? `solved: running reward ${running.toFixed(2)} > ${threshold} after ${curve.length} episode rounds in ${seconds.toFixed(1)} s`
      : `stopped after ${curve.length} episode rounds in ${seconds.toFixed(1)} s: running reward ${running.toFixed(2)} (threshold ${threshold})`,
  );
  // Each step is two calls to the agent (selectAction, reportReward); the update between rounds is in the time too.
  console.log(`${steps.toLocaleString('en-US')} environment steps, ${(2 * steps).toLocaleString('en-US')} calls to the agent: ${(steps / seconds).toFixed(0)} steps/s, ${((2 * steps) / seconds).toFixed(0)} calls/s`);
  console.log(`plot written to ${chart}`);
  if (comm) console.log(`communication code: ${comm.total} lines (${Object.entries(comm.files).map(([f, n]) => `${f} ${n}`).join(', ')})`);
}

const s = settings(process.argv.slice(2));
const rpc = await initRpc(); // comm
if (rpc.self.name === 'agent') await runAgent(rpc, s); // comm
await rpc.shutdown({ timeoutMs: 0 }); // comm
