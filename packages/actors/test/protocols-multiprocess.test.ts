/**
 * A name is not a capability (issue 37, points 1 and 2), across real OS
 * processes on a real nats-server: a member process that did not take part
 * in a context or hold an RRef, and a raw NATS client claiming a member's
 * name, can neither feed nor release another worker's context nor read its
 * RRef; the honest forks and backward work.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { connect } from 'nats';
import { defaultCodec, tf } from '@tensorbus/core';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import type { RRef } from '../src/index.js';
import { hostOf, recordingScope } from '../src/internal.js';
import { GRADS, META_KEY, RELEASE } from '../src/autograd/protocol.js';
import { FETCH_FN } from '../src/rref/rref-protocol.js';
import { assertClose } from './autograd-helpers.js';
import { echo } from './fixtures/functions.js';
import { rrefValue } from './fixtures/rref-functions.js';
import { probeCall } from './fixtures/trust-functions.js';
import { startProcessGroup, stopProcessGroups, TIMING } from './process-group.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));

test.serial('protocols trust processes - another member process and a raw client claiming a name can neither feed, release nor read what they were not given', async (t) => {
  const { agent: p0, children, namespace } = await startProcessGroup(workerScript, 4, TIMING.relaxed);
  t.teardown(async () => {
    await p0.shutdown({ graceful: false });
    for (const child of children) child.kill('SIGKILL');
  });
  const nc = await connect({ servers: (await sharedNatsServer()).url });
  t.teardown(() => nc.close());
  /** The error code a raw client gets calling `fn` on `to` while claiming to be `from` (what another account's client is). */
  const spoof = async (to: string, fn: string, args: unknown[], from: string) => {
    const reply = defaultCodec.decode((await nc.request(`${namespace}.tb.call.${to}`, defaultCodec.encode([0, fn, args, { from }]), { timeout: 10_000 })).data) as [number, { code?: string }];
    // OK (0), or OK_UNCOUNTED (2): served without being counted as the claimed sender's.
    return reply[0] === 0 || reply[0] === 2 ? 'served' : reply[1].code;
  };

  // RRefs: p0's value on p1; p3 knows the id, p2 is handed the RRef.
  const secret = p0.remote('p1', echo, ['p0 secret']) as RRef<string>;
  t.is(await secret.toHere(), 'p0 secret');
  t.deepEqual(await p0.rpcSync('p3', probeCall, ['p1', FETCH_FN, [secret.rrefId]]), { code: 'RREF_OWNER_LOST' }, 'a member process that holds no fork');
  t.is(await spoof('p1', FETCH_FN, [secret.rrefId], 'p0'), 'RREF_OWNER_LOST', 'a raw client claiming the creator\'s name');
  t.is(await p0.rpcSync('p2', rrefValue, [secret]), 'p0 secret', 'a process it was forked on to reads it');

  // Autograd: p0's context reaches p1; p3 and the raw client try to feed and end it.
  const tags: string[][] = [];
  hostOf(p0).tapCalls((_to, _args, meta) => {
    if (meta[META_KEY] !== undefined) tags.push(meta[META_KEY] as string[]);
    return undefined;
  });
  const v = tf.variable(tf.tensor1d([1, 2, 3]));
  await p0.distAutograd.context(async (ctxId) => {
    const y = await p0.rpcSync('p1', tf.mul, [v, v]);
    const reply = `${tags.at(-1)![1]}~`;
    const forged = tf.tensor1d([1000, 1000, 1000]);
    // Asked outside the context: a call made in it would make p3 a participant.
    const probe = (fn: string, args: unknown[]) => recordingScope.exit(() => p0.rpcSync('p3', probeCall, ['p1', fn, args]));
    t.deepEqual(await probe(GRADS, [ctxId, reply, [forged]]), { code: 'PERMISSION_DENIED' }, 'gradients from a member process that took no part');
    t.deepEqual(await probe(RELEASE, [ctxId]), { code: 'PERMISSION_DENIED' }, 'a release from it');
    t.is(await spoof('p1', RELEASE, [ctxId], 'p0'), 'PERMISSION_DENIED', 'a release from a raw client claiming the creator\'s name');
    forged.dispose();
    const loss = tf.sum(y);
    await p0.distAutograd.backward(ctxId, [loss]);
    // d(sum(v * v))/dv = 2v, nothing of the forged 1000s.
    const expected = tf.tensor1d([2, 4, 6]);
    await assertClose(t, p0.distAutograd.getGradients(ctxId).get(v), expected, 'v');
    tf.dispose([y, loss, expected]);
  });
  v.dispose();
  await secret.release();
});
