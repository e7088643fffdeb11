/**
 * The tensors a call makes, and the callee's log, between real OS processes:
 * `p0` here, `p1` a worker process (fixtures/worker.ts) on the shared
 * nats-server.
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { RemoteError, tf } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { initRpc } from '../src/index.js';
import { fail } from './fixtures/functions.js';
import { affine, affineAsync, liveTensors, Scaled, weightsDisposed } from './fixtures/tensor-functions.js';
import { stop } from './fixtures/worker-functions.js';
import { eventually } from './helpers.js';
import { startProcessGroup, startWorkerProcess, TIMING, stopProcessGroups } from './process-group.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));

test.serial('nats processes - tensors - functions, async functions and methods leave nothing in the callee process; a constructor argument lives with its object', async (t) => {
  const { agent, children } = await startProcessGroup(workerScript, 2);
  const x = tf.tensor1d([1, 2]);
  const baseline = await agent.rpcSync('p1', liveTensors, []);
  for (let i = 0; i < 100; i++) (await agent.rpcSync('p1', affine, [x])).dispose();
  const sums = await Promise.all(Array.from({ length: 10 }, () => agent.rpcSync('p1', affineAsync, [x, 2])));
  t.deepEqual(sums.map((s) => s.dataSync()[0]), Array.from({ length: 10 }, () => 8));
  tf.dispose(sums);
  t.is(await agent.rpcSync('p1', liveTensors, []), baseline, 'no intermediates left in p1');
  const model = agent.remote('p1', Scaled, [tf.tensor1d([10, 20])]);
  for (let i = 0; i < 20; i++) {
    const y = await model.rpcSync().forward(x);
    t.is(y.dataSync()[0], 66);
    y.dispose();
  }
  // The object holds its #private weight and the scale its constructor made.
  t.is(await agent.rpcSync('p1', liveTensors, []), baseline + 2);
  await model.release();
  let left = -1;
  for (let i = 0; i < 100 && left !== baseline; i++) {
    left = await agent.rpcSync('p1', liveTensors, []);
    if (left !== baseline) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.is(left, baseline, 'released with the object');
  t.like(await agent.rpcSync('p1', weightsDisposed, []), { disposed: [true], disposeCalls: 1 });
  x.dispose();
  await agent.rpcSync('p1', stop, []);
  await agent.shutdown({ timeoutMs: 10_000 });
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
});

test.serial("nats processes - call log - by default a function that throws writes one line to the callee's stderr", async (t) => {
  const server = await sharedNatsServer();
  const namespace = `mplog${process.pid}`;
  // TENSORBUS_QUIET unset: the worker's default logger writes to its stderr.
  const child = startWorkerProcess(workerScript, {
    NATS_URL: server.url,
    TENSORBUS_NAMESPACE: namespace,
    TENSORBUS_WORLD_SIZE: '2',
    TENSORBUS_NAME: 'p1',
    TENSORBUS_RANK: '1',
    TENSORBUS_QUIET: '',
  }, ['--heartbeat', String(TIMING.relaxed.heartbeatMs), '--failure', String(TIMING.relaxed.failureTimeoutMs)]);
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const agent = await initRpc({ name: 'p0', rank: 0, worldSize: 2, ...TIMING.relaxed, transport: natsTransport({ servers: server.url, namespace }), logger: null });
  await t.throwsAsync(agent.rpcSync('p1', fail, ['across processes']), { instanceOf: RemoteError });
  await eventually(() => stderr.includes('across processes'), 5_000);
  const lines = stderr.split('\n').filter((line) => line.includes('across processes'));
  t.deepEqual(lines, ["[tensorbus] worker 'p1': function 'test.fail' called by 'p0' failed: RangeError: across processes"]);
  await agent.rpcSync('p1', stop, []);
  await agent.shutdown({ timeoutMs: 10_000 });
  if (child.exitCode === null) await once(child, 'exit');
});
