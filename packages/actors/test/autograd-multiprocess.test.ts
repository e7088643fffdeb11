/**
 * Distributed autograd across OS processes on a real nats-server: gradients
 * through 0→1→2→0, release in every process, memory after 1,000 contexts,
 * a killed participant, DistributedOptimizer and RemoteModule.
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { AutogradError, tf } from '@tensorbus/core';
import { DistributedOptimizer, RemoteModule, type RpcAgent } from '../src/index.js';
import { startProcessGroup, TIMING, type ProcessGroup, type Timing, stopProcessGroups } from './process-group.js';
import { assertClose, localGrads, variable } from './autograd-helpers.js';
import { chain, chainLocal, contextsHere, Linear, slowIdentity, stopProcess, tensorsHere } from './fixtures/autograd-functions.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/autograd-worker.js', import.meta.url));

type Group = ProcessGroup;

const group = (size: number, timing: Timing = TIMING.relaxed) => startProcessGroup(workerScript, size, timing);

/** The contexts each of `peers` holds, asked again (for up to 5 s) until they are `expected`. */
async function contextsIn(agent: RpcAgent, peers: string[], expected: number[]): Promise<number[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const counts = await Promise.all(peers.map((p) => agent.rpcSync(p, contextsHere, [])));
    if (JSON.stringify(counts) === JSON.stringify(expected) || Date.now() > deadline) return counts;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stopGroup({ agent, children }: Group): Promise<void> {
  const live = agent.workers().map((w) => w.name).filter((n) => n !== 'p0');
  await Promise.all(live.map((name) => agent.rpcSync(name, stopProcess, []).catch(() => undefined)));
  await agent.shutdown({ timeoutMs: 10_000 }).catch(() => undefined);
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
}

test.serial('nats processes - autograd - 0→1→2→0 across three processes equals tf.grads; every process releases the context', async (t) => {
  const g = await group(3);
  const { agent } = g;
  const x = variable([6], 1);
  const w = variable([6], 2);
  const expected = localGrads((a, b) => tf.sum(chainLocal(3, a, b)), [x, w]);
  await agent.distAutograd.context(async (ctxId) => {
    const y = await agent.rpcSync('p1', chain, [['p2', 'p0', 'p1'], x, w]);
    await agent.distAutograd.backward(ctxId, [tf.sum(y)]);
    const grads = agent.distAutograd.getGradients(ctxId);
    await assertClose(t, grads.get(x), expected[0]!, 'x');
    await assertClose(t, grads.get(w), expected[1]!, 'w');
    t.deepEqual(await Promise.all(['p1', 'p2'].map((p) => agent.rpcSync(p, contextsHere, []))), [1, 1]);
  });
  // Released in the background (as PyTorch's cleanup): every process drops its part once the release reaches it.
  t.deepEqual(await contextsIn(agent, ['p1', 'p2'], [0, 0]), [0, 0], 'released in every process');
  tf.dispose([x, w, ...expected]);
  await stopGroup(g);
});

test.serial('nats processes - autograd - tensors return to baseline in every process after 1,000 contexts', async (t) => {
  const g = await group(3);
  const { agent } = g;
  const module = await RemoteModule.create(agent, 'p1', Linear, [4, 4]);
  const params = await module.remoteParameters();
  const opt = await DistributedOptimizer.create(agent, 'momentum', params, { learningRate: 0.01, momentum: 0.9 });
  const w = variable([4], 3);
  const x = tf.randomUniform([2, 4], -1, 1, 'float32', 4);
  const iteration = () =>
    agent.distAutograd.context(async (ctxId) => {
      const h = await module.forward(x);
      const y = await agent.rpcSync('p2', chain, [['p0', 'p1'], h, w]);
      const loss = tf.sum(y);
      await agent.distAutograd.backward(ctxId, [loss]);
      await opt.step(ctxId);
      tf.dispose([h, y, loss]);
    });
  await iteration();
  const baselines = await Promise.all(['p1', 'p2'].map((p) => agent.rpcSync(p, tensorsHere, [])));
  const local = tf.memory().numTensors;
  const started = Date.now();
  for (let i = 0; i < 1_000; i++) await iteration();
  t.log(`1,000 contexts across 3 processes in ${Date.now() - started} ms`);
  t.is(tf.memory().numTensors, local, 'p0');
  t.deepEqual(await Promise.all(['p1', 'p2'].map((p) => agent.rpcSync(p, tensorsHere, []))), baselines, 'p1, p2');
  t.deepEqual(await Promise.all(['p1', 'p2'].map((p) => agent.rpcSync(p, contextsHere, []))), [0, 0]);
  t.is(agent.distAutograd.size, 0);
  await opt.dispose();
  await Promise.all(params.map((p) => p.release()));
  await module.release();
  tf.dispose([w, x]);
  await stopGroup(g);
});

test.serial('nats processes - autograd - a killed participant fails backward fast, naming it', async (t) => {
  const g = await group(3, TIMING.fast);
  const { agent, children } = g;
  const x = variable([3], 5);
  await agent.distAutograd.context(async (ctxId) => {
    const y = await agent.rpcSync('p1', chain, [['p2'], x, x]);
    const loss = tf.sum(y);
    children[1]!.kill('SIGKILL');
    await once(children[1]!, 'exit');
    const started = Date.now();
    const error = await t.throwsAsync(agent.distAutograd.backward(ctxId, [loss]), { instanceOf: AutogradError, code: 'AUTOGRAD_BACKWARD_FAILED' });
    const elapsed = Date.now() - started;
    t.regex(error!.message, /'p2'/);
    t.true(elapsed < 3_000, `failed after ${elapsed} ms`);
    // A call still pending to the dead worker does not hold the context either.
    void agent.rpcSync('p1', slowIdentity, [x, 10]).catch(() => undefined);
  });
  t.deepEqual(await contextsIn(agent, ['p1'], [0]), [0]);
  x.dispose();
  await stopGroup(g);
});
