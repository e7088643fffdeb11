/**
 * A name is not a capability, for distributed autograd contexts (issue 37,
 * point 1), over every transport: only the verified worker a message was sent
 * to may send gradients for it, only a context's verified participants may
 * release it, and context and message ids carry 128 random bits.
 */
import test from 'ava';
import { tf } from '@tensorbus/core';
import type { RpcAgent } from '../src/index.js';
import { hostOf } from '../src/internal.js';
import { GRADS, META_KEY, RELEASE } from '../src/autograd/protocol.js';
import { assertClose } from './autograd-helpers.js';
import { gradientOf, linear, makeVariable } from './fixtures/autograd-functions.js';
import { everyBitVaries } from './id-bits.js';
import { eventually, groupWithOutsider as group, transportKinds } from './helpers.js';

/** The autograd tags (`[contextId, msgId]`) of the calls `agent` sends: what anyone reading its call subjects sees. */
function sniff(agent: RpcAgent): Array<[string, string]> {
  const tags: Array<[string, string]> = [];
  hostOf(agent).tapCalls((_to, _args, meta) => {
    const tag = meta[META_KEY] as [string, string] | undefined;
    if (tag !== undefined) tags.push([tag[0], tag[1]]);
    return undefined;
  });
  return tags;
}

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - autograd trust - ${title}`;

  test.serial(t('a worker that did not take part cannot inject gradients into or release another trainer\'s context; the honest gradients are unchanged'), async (tt) => {
    const { agents, outsider } = await group(tt, kind, ['trainer', 'ps', 'intruder']);
    const [trainer, ps, intruder] = agents as [RpcAgent, RpcAgent, RpcAgent];
    const tags = sniff(trainer);
    const wRef = await trainer.remote('ps', makeVariable, [[[2]]]);
    const x = tf.tensor2d([[3]]);
    // The variable exists on the ps from here on (a copy comes back).
    (await wRef.toHere()).dispose();
    const baseline = tf.memory().numTensors;
    await trainer.distAutograd.context(async (ctxId) => {
      const y = await trainer.rpcSync('ps', linear, [wRef, x]);
      const [contextId, msgId] = tags.at(-1)!;
      tt.is(contextId, ctxId);
      // The ps's reply to that message carries y back: its gradient is what the trainer's backward sends.
      for (const target of [msgId, `${msgId}~`]) {
        const forged = tf.tensor2d([[1000]]);
        const denied = await tt.throwsAsync(intruder.rpcSync('ps', GRADS, [ctxId, target, [forged]]));
        tt.is((denied as { code?: string }).code, 'PERMISSION_DENIED', `a member that was not sent ${target}`);
        const spoofed = await tt.throwsAsync(outsider.call('ps', GRADS, [ctxId, target, [forged]], { from: 'trainer' }));
        tt.is((spoofed as { code?: string }).code, 'PERMISSION_DENIED', `a caller only claiming the trainer's name, for ${target}`);
        forged.dispose();
      }
      const release = await tt.throwsAsync(intruder.rpcSync('ps', RELEASE, [ctxId]));
      tt.is((release as { code?: string }).code, 'PERMISSION_DENIED', 'a member that is not a participant cannot release it');
      const spoofedRelease = await tt.throwsAsync(outsider.call('ps', RELEASE, [ctxId], { from: 'trainer' }));
      tt.is((spoofedRelease as { code?: string }).code, 'PERMISSION_DENIED', 'nor a caller claiming a participant\'s name');
      tt.true(ps.distAutograd.has(ctxId), 'the context is still on the ps');
      const loss = tf.sum(y);
      await trainer.distAutograd.backward(ctxId, [loss]);
      // d(sum(x @ w))/dw = x: nothing of the forged 1000s was added.
      const grad = await trainer.rpcSync('ps', gradientOf, [ctxId, wRef]);
      await assertClose(tt, grad, x, 'w on the ps');
      tf.dispose([y, loss]);
      grad?.dispose();
    });
    await eventually(() => agents.every((a) => a.distAutograd.size === 0));
    await wRef.release();
    tt.is(tf.memory().numTensors, baseline, 'nothing the refused calls carried is kept');
    x.dispose();
  });

  test.serial(t('context and message ids carry 128 random bits each'), async (tt) => {
    const { agents } = await group(tt, kind, ['a', 'b']);
    const [a] = agents as [RpcAgent, RpcAgent];
    const tags = sniff(a);
    const x = tf.scalar(1);
    for (let i = 0; i < 64; i++) {
      await a.distAutograd.context(async () => {
        for (let j = 0; j < 4; j++) (await a.rpcSync('b', tf.add, [x, x])).dispose();
      });
    }
    x.dispose();
    tt.is(new Set(tags.map(([contextId]) => contextId)).size, 64);
    tt.true(everyBitVaries([...new Set(tags.map(([contextId]) => contextId))], 'a/'), 'context ids');
    tt.true(everyBitVaries(tags.map(([, msgId]) => msgId), 'a.'), 'message ids');
  });
}
