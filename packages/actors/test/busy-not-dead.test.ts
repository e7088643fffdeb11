/**
 * Busy is not dead: a worker whose main thread computes for long without
 * yielding stays in the group (its heartbeats come from the process's beacon
 * thread too), so its call returns; a killed worker still fails the call at
 * once, and a stopped one (SIGSTOP: every thread stops) within the failure
 * timeout. Real OS processes on a real nats-server.
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { WorkerUnavailableError } from '@tensorbus/core';
import { pid, spin, stop } from './fixtures/worker-functions.js';
import { startProcessGroup, TIMING, stopProcessGroups } from './process-group.js';
import { hostOf, MEMBERSHIP } from '../src/internal.js';

test.after.always(stopProcessGroups);

const worker = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test.serial('busy processes - a function that computes for 10 s without yielding returns its result; its worker is never declared failed', async (t) => {
  // Failure timeout 1 s: with heartbeats from the main thread alone, p1 was declared failed ~1 s into the call.
  const { agent, children } = await startProcessGroup(worker, 2, TIMING.fast);
  t.teardown(async () => {
    children.forEach((c) => c.exitCode === null && c.kill('SIGKILL'));
    await agent.shutdown({ graceful: false }).catch(() => undefined);
  });
  const departures: string[] = [];
  hostOf(agent).plugin(MEMBERSHIP).gone$.subscribe(({ name }) => departures.push(name));
  const started = Date.now();
  t.is(await agent.rpcSync('p1', spin, [10_000, 42], { timeoutMs: 30_000 }), 42);
  t.true(Date.now() - started >= 10_000);
  t.deepEqual(departures, [], 'p1 stayed in the group while it computed');
  t.deepEqual(agent.workers().map((w) => w.name), ['p0', 'p1']);
  await agent.rpcSync('p1', stop, []);
  await agent.shutdown({ timeoutMs: 10_000 });
  if (children[0]!.exitCode === null) await once(children[0]!, 'exit');
  t.is(children[0]!.exitCode, 0, 'p1 left and exited cleanly (its beacon thread kept nothing open)');
});

test.serial('busy processes - a worker killed (kill -9) while it computes fails the call in under a second, well within the failure timeout', async (t) => {
  // A failure timeout of 3 s: failing within 1 s shows the kill itself was seen (the call's direct
  // connection closed, and the bus has no responder any more), not the silence after it.
  const { agent, children } = await startProcessGroup(worker, 2, TIMING.relaxed);
  t.teardown(() => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL')));
  // Workers that have called each other once call directly (the route comes with the first reply).
  t.is(await agent.rpcSync('p1', pid, []), children[0]!.pid!);
  const call = agent.rpcSync('p1', spin, [10_000, 1], { timeoutMs: 30_000 });
  await settle(1_500);
  t.deepEqual(agent.workers().map((w) => w.name), ['p0', 'p1'], 'p1 is alive while it computes');
  const killed = Date.now();
  children[0]!.kill('SIGKILL');
  await t.throwsAsync(call, { instanceOf: WorkerUnavailableError });
  const took = Date.now() - killed;
  t.log(`failed ${took} ms after the kill`);
  t.true(took < 1_000, `failed ${took} ms after the kill`);
  await agent.shutdown({ graceful: false });
});

test.serial('busy processes - a stopped worker (SIGSTOP) fails the call within the failure timeout', async (t) => {
  const { agent, children } = await startProcessGroup(worker, 2, TIMING.fast);
  t.teardown(() => children.forEach((c) => {
    if (c.exitCode === null) {
      c.kill('SIGCONT');
      c.kill('SIGKILL');
    }
  }));
  const call = agent.rpcSync('p1', spin, [10_000, 1], { timeoutMs: 30_000 });
  await settle(1_500);
  t.deepEqual(agent.workers().map((w) => w.name), ['p0', 'p1'], 'p1 is alive while it computes');
  const stopped = Date.now();
  children[0]!.kill('SIGSTOP');
  const error = await t.throwsAsync(call, { instanceOf: WorkerUnavailableError });
  const took = Date.now() - stopped;
  t.log(`failed ${took} ms after the stop`);
  t.regex(error!.message, /no heartbeat/);
  // The failure timeout, plus up to one tick of the detector and a loaded machine's slack.
  t.true(took < TIMING.fast.failureTimeoutMs + 1_500, `failed ${took} ms after the stop`);
  await agent.shutdown({ graceful: false });
});
