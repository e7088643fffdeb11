/**
 * Busy is not dead: a worker whose main thread computes for long keeps its
 * heartbeats going (from a thread of their own), so its calls return; a
 * killed or stopped worker is still found out as fast as before.
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { WorkerUnavailableError } from '@tensorbus/core';
import { spin, stop } from './fixtures/worker-functions.js';
import { startProcessGroup, TIMING } from './process-group.js';

const worker = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));

test.serial('nats processes - busy - a function that computes for 10 s without yielding returns its result; the worker is never declared failed', async (t) => {
  // A failure timeout of 1 s: without heartbeats from their own thread, the worker was declared failed after ~1 s.
  const { agent, children } = await startProcessGroup(worker, 2, TIMING.fast);
  t.teardown(() => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
  let departures = 0;
  agent.membership.gone$.subscribe(() => departures++);
  const started = Date.now();
  t.is(await agent.rpcSync('p1', spin, [10_000, 42], { timeoutMs: 30_000 }), 42);
  t.true(Date.now() - started >= 10_000);
  t.is(departures, 0, 'p1 stayed in the group while it computed');
  t.deepEqual(agent.workers().map((w) => w.name), ['p0', 'p1']);
  await agent.rpcSync('p1', stop, []);
  await agent.shutdown({ timeoutMs: 10_000 });
  if (children[0]!.exitCode === null) await once(children[0]!, 'exit');
});

test.serial('nats processes - busy - a worker killed while it computes fails the call at once', async (t) => {
  const { agent, children } = await startProcessGroup(worker, 2, TIMING.fast);
  t.teardown(() => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
  const call = agent.rpcSync('p1', spin, [10_000, 1], { timeoutMs: 30_000 });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const killed = Date.now();
  children[0]!.kill('SIGKILL');
  await t.throwsAsync(call, { instanceOf: WorkerUnavailableError });
  const took = Date.now() - killed;
  t.true(took < TIMING.fast.failureTimeoutMs + 1_000, `failed ${took} ms after the kill`);
  await agent.shutdown({ graceful: false });
});

test.serial('nats processes - busy - a stopped worker (SIGSTOP) fails the call within the failure timeout', async (t) => {
  const { agent, children } = await startProcessGroup(worker, 2, TIMING.fast);
  t.teardown(() => children.forEach((c) => {
    if (c.exitCode === null) {
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    }
  }));
  const call = agent.rpcSync('p1', spin, [10_000, 1], { timeoutMs: 30_000 });
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const stopped = Date.now();
  children[0]!.kill('SIGSTOP');
  await t.throwsAsync(call, { instanceOf: WorkerUnavailableError });
  const took = Date.now() - stopped;
  t.true(took < TIMING.fast.failureTimeoutMs + 2_000, `failed ${took} ms after the stop`);
  await agent.shutdown({ graceful: false });
});
