/**
 * A name is not a capability, for RRefs (issue 37, point 2), over every
 * transport: an owner serves a value only to the workers that hold a fork of
 * it (its creator, forks it sent, forks their holders passed on and the owner
 * was told of), checked by who the call shows it comes from; anyone else gets
 * the answer an unknown id gets. RRef ids carry 128 random bits.
 */
import test, { type ExecutionContext } from 'ava';
import { remoteFunction, currentAgent, type RpcAgent, type RRef } from '../src/index.js';
import { hostOf } from '../src/internal.js';
import { CALL_FN, FETCH_FN, FORK } from '../src/rref/rref-protocol.js';
import { echo } from './fixtures/functions.js';
import { forwardChain, Holder, makeLocal, rrefValue } from './fixtures/rref-functions.js';
import { everyBitVaries } from './id-bits.js';
import { eventually, groupWithOutsider as group, transportKinds } from './helpers.js';

/** Reads `rref` on worker `next`: the RRef is forked on once more (a nested fork). */
const readOn = remoteFunction('test.rrefTrust.readOn', (next: string, rref: RRef<unknown>) => currentAgent().rpcSync(next, rrefValue, [rref]));

/** The error `run` rejects with, its id replaced: a refusal must read exactly as an unknown id does. */
async function refusal(tt: ExecutionContext, run: () => Promise<unknown>, id: string): Promise<string> {
  const error = (await tt.throwsAsync(run)) as { code?: string; message: string } | undefined;
  return `${error?.code}: ${error?.message.replaceAll(id, '<id>')}`;
}

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - rref trust - ${title}`;

  test.serial(t('a worker that was not handed an RRef cannot fetch, call or fork it knowing its id; holders it was forked on to can'), async (tt) => {
    const { agents, outsider } = await group(tt, kind, ['server', 'alice', 'bob', 'carol', 'mallory']);
    const [server, alice, bob, , mallory] = agents as [RpcAgent, RpcAgent, RpcAgent, RpcAgent, RpcAgent];
    const secret = bob.remote('server', echo, ['bob secret']) as RRef<string>;
    const holder = bob.remote('server', Holder, []);
    tt.is(await secret.toHere(), 'bob secret', 'its creator reads it');
    tt.is(await (holder as RRef<{ push(item: unknown): number }>).rpcSync().push('bob item'), 1, 'its creator calls its methods');
    // Mallory knows a sibling id: her own RRef's, from the same owner.
    const own = await mallory.rpcSync('server', makeLocal, ['mallory value']);
    tt.is(await own.toHere(), 'mallory value', 'an RRef the owner returned is read by its holder');
    const stats = JSON.stringify(server.rrefStats());
    const madeUp = `${secret.rrefId.slice(0, -4)}AAAA`;
    const unknown = await refusal(tt, () => mallory.rpcSync('server', FETCH_FN, [madeUp]), madeUp);
    tt.regex(unknown, /^RREF_OWNER_LOST: /);
    for (const rref of [secret, holder]) {
      tt.is(await refusal(tt, () => mallory.rpcSync('server', FETCH_FN, [rref.rrefId]), rref.rrefId), unknown, 'a member that holds no fork: fetch');
      tt.is(await refusal(tt, () => mallory.rpcSync('server', CALL_FN, [rref.rrefId, 'push', ['x']]), rref.rrefId), unknown, 'a member that holds no fork: method call');
      tt.is(await refusal(tt, () => outsider.call('server', FETCH_FN, [rref.rrefId], { from: 'bob' }), rref.rrefId), unknown, 'a caller claiming the creator\'s name');
      // Confirming a fork nobody sent her, or passing on one she does not hold, registers nothing.
      const fork = (await hostOf(mallory).requestControl('server', { k: FORK, rrefId: rref.rrefId, forkId: `mallory.${rref.rrefId.slice(-8)}`, holder: 'mallory', parent: 'bob' }, 2_000)) as { ok?: boolean };
      tt.not(fork.ok, true, 'a made-up fork is not confirmed');
      const forked = (await hostOf(mallory)
        .requestControl('server', { k: 'rref.forked', rrefId: rref.rrefId, forkId: 'm.1', parentFork: 'bob.1', holder: 'mallory' }, 2_000)
        .catch((error: unknown) => ({ error }))) as { ok?: boolean };
      tt.not(forked.ok, true, 'a fork of a fork she does not hold is refused');
      tt.is(await refusal(tt, () => mallory.rpcSync('server', FETCH_FN, [rref.rrefId]), rref.rrefId), unknown, 'still refused after the forged forks');
    }
    tt.is(JSON.stringify(server.rrefStats()), stats, 'the refused attempts left nothing on the owner');
    // PyTorch's fork semantics hold: an argument (user -> user), a nested fork, a return chain.
    tt.is(await bob.rpcSync('alice', rrefValue, [secret]), 'bob secret', 'a fork passed as an argument');
    tt.is(await bob.rpcSync('alice', readOn, ['carol', secret]), 'bob secret', 'a fork of a fork');
    const back = await bob.rpcSync('alice', forwardChain, [['alice', 'carol'], 3, secret]);
    tt.is(await back.toHere(), 'bob secret', 'an RRef returned along a chain');
    tt.is(await bob.rpcSync('server', rrefValue, [secret]), 'bob secret', 'handed back to its owner by a holder');
    await Promise.all([secret.release(), holder.release(), own.release(), back.release()]);
    await eventually(() => agents.every((a) => a.rrefStats().owners + a.rrefStats().users + a.rrefStats().pendingUsers + a.rrefStats().pendingChildren === 0), 10_000);
  });

  test.serial(t('RRef ids carry 128 random bits each'), async (tt) => {
    const { agents } = await group(tt, kind, ['a']);
    const [a] = agents as [RpcAgent];
    const refs = Array.from({ length: 64 }, (_, i) => a.rref(i));
    tt.true(everyBitVaries(refs.map((r) => r.rrefId), 'a.'));
    await Promise.all(refs.map((r) => r.release()));
  });
}
