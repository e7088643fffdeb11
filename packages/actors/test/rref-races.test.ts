import test from 'ava';
import { addNumbers, sleep } from './fixtures/functions.js';
import { rrefValue } from './fixtures/rref-functions.js';
import { eventually, startGroup, stopAll, transportKinds } from './helpers.js';
import { stopEverything } from './helpers.js';
import { hostOf } from '../src/internal.js';
import { defaultCodec, SerializationError } from '@tensorbus/core';
import { controlSubject } from '../src/agent/subjects.js';
import { readRRefMessage } from '../src/rref/rref-protocol.js';
import { decodeWithoutTensors } from '../src/tensors.js';

test.after.always(stopEverything);

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - rref races - ${title}`;

  test(t('a fork and its delete arriving at the owner in either order leave nothing behind'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a, b] = agents;
    const local = b!.rref({ v: 1 });
    const rrefId = (local as unknown as { rrefId: string }).rrefId;
    // Delete before fork: the late fork must not revive the fork.
    await hostOf(a!).control.request('b', { k: 'rref.delete', forks: [[rrefId, 'x1']] }, 2_000);
    await hostOf(a!).control.request('b', { k: 'rref.fork', rrefId, forkId: 'x1', holder: 'a', parent: 'b' }, 2_000);
    tt.is(b!.rrefStats().owners, 1);
    // Fork before delete: the ordinary order.
    await hostOf(a!).control.request('b', { k: 'rref.fork', rrefId, forkId: 'x2', holder: 'a', parent: 'b' }, 2_000);
    await hostOf(a!).control.request('b', { k: 'rref.delete', forks: [[rrefId, 'x2']] }, 2_000);
    // Duplicates of either message change nothing.
    await hostOf(a!).control.request('b', { k: 'rref.delete', forks: [[rrefId, 'x2']] }, 2_000);
    await local.release();
    tt.deepEqual(b!.rrefStats(), { owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 });
    await stopAll(agents);
  });

  test(t('release during a pending fork waits for the child (G2) and leaks nothing'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c']);
    const [a, b, c] = agents;
    const r = a!.remote('c', addNumbers, [2, 2]);
    const passing = a!.rpcSync('b', rrefValue, [r]);
    const released = r.release();
    tt.is(await passing, 4, 'the child could still use the value');
    await released;
    await eventually(() => [a, b, c].every((w) => w!.rrefStats().owners + w!.rrefStats().users + w!.rrefStats().pendingChildren + w!.rrefStats().pendingUsers === 0), 10_000);
    tt.pass();
    await stopAll(agents);
  });

  test(t('malformed RRef messages are refused without harm'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a, b] = agents;
    const reply = (await hostOf(a!).control.request('b', { k: 'rref.fork', rrefId: 42 }, 2_000)) as { error?: unknown };
    tt.truthy(reply.error);
    await hostOf(a!).control.request('b', { k: 'rref.delete' }, 2_000);
    const tooMany = (await hostOf(a!).control.request('b', { k: 'rref.delete', forks: Array.from({ length: 257 }, (_, i) => ['b.x.1', `f${i}`]) }, 2_000)) as { ok?: boolean };
    tt.is(tooMany.ok, false, 'a delete list longer than a batch is refused whole');
    await hostOf(a!).control.request('b', { k: 'rref.delete', forks: [42, ['only-one'], [null, 'f'], 'b.x.1|f'] }, 2_000);
    tt.is(await a!.rpcSync('b', sleep, [1, 'alive']), 'alive');
    tt.deepEqual(b!.rrefStats(), { owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 });
    await stopAll(agents);
  });

  test(t('every kind of RRef message with a field of the wrong shape is refused with SERIALIZATION and changes nothing; an unknown kind is refused too'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a, b] = agents;
    // Real state on both sides: b owns a value, a holds a confirmed fork of it.
    const held = a!.remote('b', addNumbers, [1, 2]);
    tt.is(await held.toHere(), 3);
    const rrefId = held.rrefId;
    const forkId = (held as unknown as { user: { forkId: string } }).user.forkId;
    const fields: Record<string, Record<string, unknown>> = {
      'rref.forked': { rrefId, forkId: 'a.new', parentFork: forkId, holder: 'a' },
      'rref.fork': { rrefId, forkId, holder: 'a', parent: 'b' },
      'rref.child': { rrefId, forkId },
    };
    const wrong = [42, null, '', 'x'.repeat(10_000), ['a'], { s: 'a' }];
    const before = JSON.stringify([a!.rrefStats(), b!.rrefStats()]);
    const refusals: string[] = [];
    const ask = async (to: string, message: Record<string, unknown>) => {
      const answer = (await hostOf(a!).control.request(to, message as { k: string }, 2_000)) as { ok?: boolean; error?: { code?: string } };
      refusals.push(`${JSON.stringify(message).slice(0, 80)}: ${answer.ok} ${answer.error?.code}`);
    };
    for (const [k, shape] of Object.entries(fields)) {
      for (const field of Object.keys(shape)) {
        for (const value of [...wrong, undefined]) {
          for (const to of ['a', 'b']) await ask(to, { k, ...shape, [field]: value });
        }
      }
    }
    for (const forks of [undefined, 42, 'a|b', { length: 1 }, Array.from({ length: 257 }, () => [rrefId, forkId])]) {
      for (const to of ['a', 'b']) await ask(to, { k: 'rref.delete', forks });
    }
    tt.deepEqual(refusals.filter((line) => !line.endsWith(': false SERIALIZATION')), [], 'each answered { ok: false } with a SerializationError');
    tt.is(refusals.length, (4 + 4 + 2) * 7 * 2 + 5 * 2);
    // A kind the protocol does not have: the control channel refuses it before any RRef code sees it (a sender
    // cannot even send it: it is declared by no plugin), and the protocol's own reader refuses it as well.
    const bogus = decodeWithoutTensors(await hostOf(a!).transport.request(controlSubject('b'), defaultCodec.encode({ k: 'rref.bogus', rrefId, forkId }), { timeoutMs: 2_000 })) as { error?: { code?: string; message?: string } };
    tt.is(bogus.error?.code, 'INVALID_ARGUMENT');
    tt.regex(bogus.error?.message ?? '', /handles no control messages of kind 'rref\.bogus'/);
    tt.true(readRRefMessage({ k: 'rref.bogus', rrefId, forkId }) instanceof SerializationError);
    tt.true(readRRefMessage(null) instanceof SerializationError);
    tt.is(JSON.stringify([a!.rrefStats(), b!.rrefStats()]), before, 'the refused messages changed nothing on either side');
    tt.is(await held.toHere(), 3, 'the fork still reads its value');
    await held.release();
    await eventually(() => b!.rrefStats().owners === 0, 10_000);
    tt.pass();
    await stopAll(agents);
  });
}
