/**
 * What the RRef and autograd protocols wait for (issue 16, docs/rref.md and
 * docs/dist-autograd.md "Messages per operation"): `toHere()` right after
 * `remote()` goes out behind the creation instead of after its
 * acknowledgement, a fetch that overtakes its creation is sent again, and
 * neither `release()` nor the end of a context waits for the owner's or the
 * peer's answer, which still comes and still frees everything.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { tf } from '@tensorbus/core';
import { sleep } from './fixtures/functions.js';
import { rrefValue } from './fixtures/rref-functions.js';
import { rrefCountsHere, spin, stop, tensorsHere } from './fixtures/worker-functions.js';
import { once } from 'node:events';
import { contextsHere, mul, stopProcess } from './fixtures/autograd-functions.js';
import { startProcessGroup, TIMING, stopProcessGroups } from './process-group.js';
import { eventually, rrefsReleased, startGroup, stopAll, stopEverything, transportKinds } from './helpers.js';
import { hostOf } from '../src/internal.js';

test.after.always(stopProcessGroups);

test.after.always(stopEverything);

const SLACK = { failureTimeoutMs: 5_000 };
const ZERO = { owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 };

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - rref protocol - ${title}`;

  test(t('toHere() in the same turn as remote() rides on the creation: the owner serves one call, whose reply brings the value'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a, b] = agents;
    const served = () => hostOf(b!).server.receivedFrom['a'] ?? 0;
    const before = served();
    const r = a!.remote('b', sleep, [50, 'made']);
    tt.is(await r.toHere(), 'made');
    tt.is(served() - before, 1, 'one call: the creation, no fetch');
    tt.true(r.confirmedByOwner());
    tt.is(await r.toHere(), 'made', 'a later toHere() fetches');
    tt.is(served() - before, 2);
    await r.release();
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  test(t('toHere() after the creation went out is sent right behind it, before the owner acknowledged it'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a, b] = agents;
    const served = () => hostOf(b!).server.receivedFrom['a'] ?? 0;
    const before = served();
    // The creation runs 3 s: a window no stall of this process (other tests of the file run beside this one) closes.
    const r = a!.remote('b', sleep, [3_000, 'made']);
    await new Promise((resolve) => setImmediate(resolve));
    const value = r.toHere();
    // Both calls reached the owner while the creation still runs: the fetch did not wait for its reply.
    await eventually(() => served() - before >= 2, 2_500);
    tt.false(r.confirmedByOwner(), 'the creation is not acknowledged yet');
    tt.is(await value, 'made');
    await r.release();
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  test(t('a call made right after remote() does not overtake the creation'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a, b] = agents;
    const r = a!.remote('b', sleep, [0, 'made']);
    // By id, as a peer outside the RRef protocol would: the owner must already know the value.
    const rrefId = (r as unknown as { rrefId: string }).rrefId;
    tt.is(await a!.rpcSync('b', 'tb.rref.fetch', [rrefId]), 'made');
    tt.like(b!.rrefStats(), { owners: 1 });
    await r.release();
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  test(t('a fetch that overtakes its creation finds nothing, changes nothing, and is sent again once the creation is acknowledged'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c'], SLACK);
    const [a, b] = agents;
    // The creation on b waits for its RRef argument (made on c for 300 ms) before it opens its value,
    // so the fetch sent right behind it reaches b first.
    const slowArgument = a!.remote('c', sleep, [300, 7]);
    const r = a!.remote('b', rrefValue, [slowArgument]);
    tt.is(await r.toHere(), 7);
    tt.like(b!.rrefStats(), { owners: 1 }, 'the value was made once');
    await Promise.all([r.release(), slowArgument.release()]);
    await rrefsReleased(agents);
    await stopAll(agents);
  });

  test(t('600 RRefs released at once to one owner are all dropped there (their deletes go in batches)'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a, b] = agents;
    const refs = Array.from({ length: 600 }, (_, i) => a!.remote('b', sleep, [0, i]));
    tt.deepEqual(await Promise.all(refs.map((r) => r.toHere())), refs.map((_, i) => i));
    tt.like(b!.rrefStats(), { owners: 600 });
    await Promise.all(refs.map((r) => r.release()));
    await rrefsReleased(agents);
    await stopAll(agents);
  });
}

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - autograd protocol - ${title}`;

  test(t('only tensors that can carry a gradient take one back: a backward past an input batch is one exchange'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b'], SLACK);
    const [a, b] = agents;
    const callsFromB = () => hostOf(a!).server.receivedFrom['b'] ?? 0;
    const w = tf.variable(tf.tensor1d([1, 2, 3]));
    const batch = tf.tensor1d([4, 5, 6]);
    await a!.distAutograd.context(async (ctxId) => {
      // The batch depends on nothing differentiable here: b gets no gradient path back to a for it.
      const y = await a!.rpcSync('b', mul, [batch, batch]);
      const loss = tf.sum(tf.mul(y, w));
      const before = callsFromB();
      await a!.distAutograd.backward(ctxId, [loss]);
      tt.is(callsFromB() - before, 0, 'b sent no gradient back for the batch');
      tt.deepEqual(Array.from(a!.distAutograd.getGradients(ctxId).get(w)!.dataSync()), [16, 25, 36]);
      tf.dispose([y, loss]);
    });
    await a!.distAutograd.context(async (ctxId) => {
      // A variable sent as an argument does take its gradient back.
      const y = await a!.rpcSync('b', mul, [w, batch]);
      const loss = tf.sum(y);
      const before = callsFromB();
      await a!.distAutograd.backward(ctxId, [loss]);
      tt.is(callsFromB() - before, 1, 'b sent the gradient of w back');
      tt.deepEqual(Array.from(a!.distAutograd.getGradients(ctxId).get(w)!.dataSync()), [4, 5, 6]);
      tf.dispose([y, loss]);
    });
    tf.dispose([w, batch]);
    await eventually(() => b!.distAutograd.size === 0);
    await stopAll(agents);
  });
}

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
const autogradWorkerScript = fileURLToPath(new URL('./fixtures/autograd-worker.js', import.meta.url));
/** The owner computes this long without yielding: longer than any release should take, shorter than the failure timeout (3 s). */
const BUSY_MS = 1_200;

test.serial('nats processes - rref protocol - release() does not wait for a busy owner, which drops the value once the delete arrives', async (t) => {
  const { agent, children } = await startProcessGroup(workerScript, 2, TIMING.relaxed);
  const baseline = await agent.rpcSync('p1', tensorsHere, []);
  const r = agent.remote('p1', tf.ones, [[16]]);
  (await r.toHere()).dispose();
  const busy = agent.rpcAsync('p1', spin, [BUSY_MS, 1]).wait();
  await new Promise((resolve) => setTimeout(resolve, 100));
  const started = Date.now();
  await r.release();
  const took = Date.now() - started;
  t.true(took < BUSY_MS / 2, `release() took ${took} ms while its owner was busy for ${BUSY_MS} ms`);
  t.deepEqual(agent.rrefStats(), ZERO, 'the fork is gone here at once');
  t.is(await busy, 1);
  let remote = await agent.rpcSync('p1', rrefCountsHere, []);
  for (let i = 0; i < 100 && remote.owners !== 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    remote = await agent.rpcSync('p1', rrefCountsHere, []);
  }
  t.deepEqual(remote, ZERO, 'the owner dropped the value when the delete arrived');
  t.is(await agent.rpcSync('p1', tensorsHere, []), baseline);
  await agent.rpcSync('p1', stop, []);
  await agent.shutdown({ timeoutMs: 5_000 });
  if (children[0]!.exitCode === null) await once(children[0]!, 'exit');
});

test.serial('nats processes - autograd - a context ends without waiting for a busy peer, which drops its part once the release arrives', async (t) => {
  const { agent, children } = await startProcessGroup(autogradWorkerScript, 2, TIMING.relaxed);
  const baseline = await agent.rpcSync('p1', tensorsHere, []);
  const w = tf.variable(tf.tensor1d([1, 2, 3]));
  const x = tf.tensor1d([4, 5, 6]);
  let busy: Promise<number> | undefined;
  let ended = 0;
  await agent.distAutograd.context(async (ctxId) => {
    const y = await agent.rpcSync('p1', mul, [w, x]);
    const loss = tf.sum(y);
    await agent.distAutograd.backward(ctxId, [loss]);
    t.deepEqual(Array.from(agent.distAutograd.getGradients(ctxId).get(w)!.dataSync()), [4, 5, 6]);
    t.is(await agent.rpcSync('p1', contextsHere, []), 1, 'the peer holds its part of the context');
    busy = agent.rpcAsync('p1', spin, [BUSY_MS, 1]).wait();
    await new Promise((resolve) => setTimeout(resolve, 100));
    tf.dispose([y, loss]);
    ended = Date.now();
  });
  const took = Date.now() - ended;
  t.true(took < BUSY_MS / 2, `the context took ${took} ms to end while its peer was busy for ${BUSY_MS} ms`);
  t.is(agent.distAutograd.size, 0, 'released here at once');
  t.is(await busy, 1);
  let parts = await agent.rpcSync('p1', contextsHere, []);
  for (let i = 0; i < 100 && parts !== 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    parts = await agent.rpcSync('p1', contextsHere, []);
  }
  t.is(parts, 0, 'the peer dropped its part when the release arrived');
  t.is(await agent.rpcSync('p1', tensorsHere, []), baseline, 'and the tensors it held');
  tf.dispose([w, x]);
  await agent.rpcSync('p1', stopProcess, []).catch(() => undefined);
  await agent.shutdown({ timeoutMs: 5_000 });
  if (children[0]!.exitCode === null) await once(children[0]!, 'exit');
});
