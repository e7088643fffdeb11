/**
 * A worker wrongly declared failed (its process stopped with SIGSTOP for
 * longer than the failure timeout, then resumed with SIGCONT), with real OS
 * processes over a real nats-server: the references across it fail cleanly
 * with RREF_OWNER_LOST, and once released every count and tensor is back to
 * zero on both sides (none is kept for good on the stalled worker).
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { RRefError, tf } from '@tensorbus/core';
import { startProcessGroup, TIMING, stopProcessGroups } from './process-group.js';
import { holdOn, releaseHeld, useHeld } from './fixtures/peer-functions.js';
import { rrefStatsHere, stop, tensorsHere } from './fixtures/worker-functions.js';
import { eventually } from './helpers.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
const zero = { owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 };

test.serial('nats processes - rref - a worker stalled past the failure timeout fails its references cleanly and leaks none', async (t) => {
  const { agent, children } = await startProcessGroup(workerScript, 2, TIMING.fast);
  const child = children[0]!;
  const remoteBaseline = await agent.rpcSync('p1', tensorsHere, []);
  const localBaseline = tf.memory().numTensors;
  // p0 holds 5 values owned by p1, p1 holds 5 values owned by p0.
  const mine = Array.from({ length: 5 }, () => agent.remote('p1', tf.ones, [[4]]));
  for (const r of mine) (await r.toHere()).dispose();
  t.is(await agent.rpcSync('p1', holdOn, ['p0', 5]), 5);
  t.like(agent.rrefStats(), { owners: 5, users: 5 });
  t.like(await agent.rpcSync('p1', rrefStatsHere, []), { owners: 5, users: 5 });

  child.kill('SIGSTOP');
  try {
    await eventually(() => agent.workers().every((w) => w.name !== 'p1'), 10_000);
  } finally {
    child.kill('SIGCONT');
  }
  await eventually(() => agent.workers().some((w) => w.name === 'p1'), 10_000);
  t.is(agent.rrefStats().owners, 0, "p0 dropped p1's forks when it declared p1 failed");

  // Both directions fail with a typed error, at once, instead of hanging or succeeding on freed values.
  for (const r of mine) {
    const error = await t.throwsAsync(r.toHere(), { instanceOf: RRefError });
    t.is(error!.code, 'RREF_OWNER_LOST');
  }
  t.deepEqual(await agent.rpcSync('p1', useHeld, []), Array(5).fill('RREF_OWNER_LOST'));

  await Promise.all(mine.map((r) => r.release()));
  t.is(await agent.rpcSync('p1', releaseHeld, []), 5);
  await eventually(() => JSON.stringify(agent.rrefStats()) === JSON.stringify(zero), 10_000);
  let remote = await agent.rpcSync('p1', rrefStatsHere, []);
  const deadline = Date.now() + 10_000;
  while (JSON.stringify(remote) !== JSON.stringify(zero) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    remote = await agent.rpcSync('p1', rrefStatsHere, []);
  }
  t.deepEqual(remote, zero, 'the stalled worker keeps no value for good');
  t.is(await agent.rpcSync('p1', tensorsHere, []), remoteBaseline);
  t.is(tf.memory().numTensors, localBaseline);

  await agent.rpcSync('p1', stop, []);
  await agent.shutdown({ timeoutMs: 5_000 });
  if (child.exitCode === null) await once(child, 'exit');
});
