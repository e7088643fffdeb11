import test from 'ava';
import { addNumbers, sleep } from './fixtures/functions.js';
import { rrefValue } from './fixtures/rref-functions.js';
import { eventually, startGroup, stopAll, transportKinds } from './helpers.js';
import { stopEverything } from './helpers.js';
import { hostOf } from '../src/internal.js';

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
}
