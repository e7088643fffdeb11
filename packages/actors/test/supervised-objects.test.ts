/**
 * Supervised remote objects (issue 41): `agent.remote(to, Class, args,
 * { maxRestarts })` made again on its owner's restarted incarnations, its
 * state restored from the owner's JetStream checkpoints, across real worker
 * processes killed with kill -9 under `tensorbus launch --max-restarts`; and
 * the options' refusals, over every transport.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError, RRefError } from '@tensorbus/core';
import { remoteClass, remoteFunction } from '../src/index.js';
import { launch, type Launched } from './launcher-helpers.js';
import { eventually, startGroup, stopAll, stopEverything, transportKinds } from './helpers.js';
import type { ObjectCheckpointStore } from '../src/index.js';
import { hostOf } from '../src/internal.js';
import { CREATE_FN } from '../src/rref/rref-protocol.js';

/** A checkpoint store in memory: what the owner saved and deleted. */
function memoryStore(): ObjectCheckpointStore & { saved: Map<string, Record<string, unknown>> } {
  const saved = new Map<string, Record<string, unknown>>();
  return {
    saved,
    save: async (key, entries) => void saved.set(key, { ...entries }),
    load: async (key) => saved.get(key),
    delete: async (key) => void saved.delete(key),
  };
}

const worker = fileURLToPath(new URL('./fixtures/supervised-objects-worker.js', import.meta.url));

const Box = remoteClass(
  'test.supervisedObjects.Box',
  class {
    n = 1;
    get(): number {
      return this.n;
    }
    bump(): number {
      return ++this.n;
    }
  },
  { idempotent: ['get'] },
);
const Saved = remoteClass(
  'test.supervisedObjects.Saved',
  class {
    n = 0;
    inc(k: number): number {
      return (this.n += k);
    }
    checkpoint(): Record<string, unknown> {
      return { n: this.n };
    }
    restore(state: Record<string, unknown>): void {
      this.n = Number(state.n);
    }
  },
);
const twice = remoteFunction('test.supervisedObjects.twice', (x: number) => 2 * x);
const readOnly = remoteFunction('test.supervisedObjects.readOnly', (x: number) => x, { idempotent: true });

/** The pid of `name`'s incarnation `restart` (from its `ready` line). */
function pidOf(launched: Launched, name: string, restart: number): number {
  const match = new RegExp(`ready ${name} (\\d+) restart=${restart}`).exec(launched.out());
  if (!match) throw new Error(`no ready line of ${name} restart=${restart}\n${launched.out()}`);
  return Number(match[1]);
}

test.after.always(stopEverything);

test.serial('supervised objects - the RRef survives two kill -9 restarts of its owner with its checkpointed state; an unsupervised one fails with RREF_OWNER_LOST; past maxRestarts it fails; an in-flight call fails once and idempotent retried calls (method, function) succeed', async (t) => {
  const launched = launch(['-n', '2', '--names', 'w0,w1', '--max-restarts', '3', worker]);
  try {
    await launched.printed(/\[w0\] made/);
    t.log(/\[w0\] timing: .*/.exec(launched.out())?.[0]);
    await launched.printed(/ready w1 \d+ restart=0/);
    const killed = Date.now();
    process.kill(pidOf(launched, 'w1', 0), 'SIGKILL');
    t.log(`kill -9 to the re-made object's first answer: ${(await launched.printed(/\[w0\] back 1: .*/)) - killed} ms (failureTimeoutMs 1000)`);
    // Restored from its checkpoint (11, not the constructor's 10); the hook-less Tally starts from its constructor; the plain one is lost.
    await launched.printed(/\[w0\] back 1: .*/);
    t.regex(launched.out(), /\[w0\] back 1: counter=11 tally=100 plain=RREF_OWNER_LOST\n/);
    // A use made while the owner was away waited for the object to be back.
    await launched.printed(/\[w0\] toHere while away: .*/);
    t.regex(launched.out(), /\[w0\] toHere while away: \{"n":11\}\n/);
    await launched.printed(/\[w0\] inc 1: 12\n/);
    await launched.printed(/\[w0\] slow calls sent/);
    await launched.printed(/ready w1 \d+ restart=1/);
    process.kill(pidOf(launched, 'w1', 1), 'SIGKILL');
    await launched.printed(/\[w0\] slowGet: .*/);
    // At most once: the non-idempotent call in flight failed with its error and was not replayed (the counter is still 12).
    t.regex(launched.out(), /\[w0\] slowInc: WORKER_UNAVAILABLE\n/);
    t.regex(launched.out(), /\[w0\] slowGet: 12\n/);
    // An idempotent function retried with { retries: 1 } is answered by the callee's next incarnation.
    await launched.printed(/\[w0\] slowAnswer: .*/);
    t.regex(launched.out(), /\[w0\] slowAnswer: 7 from restart 2\n/);
    await launched.printed(/\[w0\] back 2: .*/);
    t.regex(launched.out(), /\[w0\] back 2: counter=12 tally=100 plain=RREF_OWNER_LOST\n/);
    await launched.printed(/\[w0\] inc 2: 13\n/);
    // A third death is past maxRestarts 2: the RRef is lost for good.
    await launched.printed(/ready w1 \d+ restart=2/);
    process.kill(pidOf(launched, 'w1', 2), 'SIGKILL');
    await launched.printed(/\[w0\] back 3: .*/);
    t.regex(launched.out(), /\[w0\] back 3: counter=RREF_OWNER_LOST tally=RREF_OWNER_LOST plain=RREF_OWNER_LOST\n/);
    process.kill(-launched.launcher.pid!, 'SIGINT');
    t.is(await launched.exit, 130);
  } finally {
    if (launched.launcher.exitCode === null) process.kill(-launched.launcher.pid!, 'SIGKILL');
  }
});

for (const kind of transportKinds('without-tcp')) {
  test.serial(`supervised objects (${kind.name}) - retries are refused unless idempotent and supervised; maxRestarts is checked; a supervised object's owner that leaves ends it with RREF_OWNER_LOST`, async (t) => {
    const [w0, w1] = await startGroup(kind, ['w0', 'w1']);
    try {
      const box = w0.remote('w1', Box, [], { maxRestarts: 1 });
      t.is(await box.rpcSync({ retries: 2 }).get(), 1);
      await t.throwsAsync(box.rpcSync({ retries: 1 }).bump(), { instanceOf: InvalidArgumentError, message: /not declared idempotent/ });
      const plain = w0.remote('w1', Box, []);
      await t.throwsAsync(plain.rpcSync({ retries: 1 }).get(), { instanceOf: InvalidArgumentError, message: /supervised/ });
      await t.throwsAsync(box.rpcSync({ retries: -1 }).get(), { instanceOf: InvalidArgumentError });
      await t.throwsAsync(w0.rpcSync('w1', twice, [2], { retries: 1 }), { instanceOf: InvalidArgumentError, message: /not declared idempotent/ });
      t.is(await w0.rpcSync('w1', readOnly, [3], { retries: 1 }), 3);
      t.is(await w0.rpcSync('w1', twice, [3]), 6);
      t.throws(() => w0.rpcStream('w1', readOnly, [1], { retries: 1 }), { instanceOf: InvalidArgumentError, message: /not to streams/ });
      t.throws(() => w0.remote('w1', Box, [], { maxRestarts: 1.5 }), { instanceOf: InvalidArgumentError });
      t.throws(() => w0.remote('w1', Box, [], { maxRestarts: 1, retries: 1 }), { instanceOf: InvalidArgumentError, message: /not to remote/ });
      t.throws(() => box.remote({ retries: 1 }).get(), { instanceOf: InvalidArgumentError, message: /not to remote/ });
      t.throws(() => w0.remote('w0', Box, [], { maxRestarts: 1 }), { instanceOf: InvalidArgumentError });
      t.throws(() => w0.remote('w1', twice, [1], { maxRestarts: 1 }), { instanceOf: InvalidArgumentError });
      await w1!.shutdown({ graceful: false });
      const lost = await box.rpcSync().get().catch((error: unknown) => error);
      t.true(lost instanceof RRefError && lost.code === 'RREF_OWNER_LOST', String(lost));
    } finally {
      await stopAll([w0!, w1!]);
    }
  });
}

for (const kind of transportKinds('without-tcp')) {
  test.serial(`supervised objects (${kind.name}) - the owner saves a supervised object's checkpoint after each method call, only for classes with the hooks, and deletes it when the object is released`, async (t) => {
    const store = memoryStore();
    const [a, b] = await startGroup(kind, ['a', 'b'], { checkpoints: store });
    try {
      const saved = a!.remote('b', Saved, [], { maxRestarts: 1 });
      const unsupervised = a!.remote('b', Saved, []);
      const hookless = a!.remote('b', Box, [], { maxRestarts: 1 });
      t.is(await saved.rpcSync().inc(2), 2);
      t.is(await unsupervised.rpcSync().inc(5), 5);
      t.is(await hookless.rpcSync().bump(), 2);
      t.deepEqual([...store.saved.values()], [{ n: 2 }], 'only the supervised object with checkpoint()/restore(), saved before the reply');
      t.is(await saved.rpcSync().inc(1), 3);
      t.deepEqual([...store.saved.values()], [{ n: 3 }]);
      await saved.release();
      await eventually(() => store.saved.size === 0);
      t.is(store.saved.size, 0, 'its checkpoint ends with it');
    } finally {
      await stopAll([a!, b!]);
    }
  });
}

for (const kind of transportKinds('without-tcp')) {
  test.serial(`supervised objects (${kind.name}) - a creation request with a malformed supervised or restart field is refused with RREF_CREATION_FAILED, keeps nothing, and the owner serves on`, async (t) => {
    const [a, b] = await startGroup(kind, ['a', 'b'], { checkpoints: memoryStore() });
    try {
      const host = hostOf(a!);
      const bad = [
        { fn: 'test.supervisedObjects.Saved', args: [], supervised: 'yes' },
        { fn: 'test.supervisedObjects.Saved', args: [], supervised: true, restart: -1 },
        { fn: 'test.supervisedObjects.Saved', args: [], supervised: true, restart: 1.5 },
        { fn: 'test.supervisedObjects.Saved', args: [], supervised: true, restart: 1e9 },
      ];
      for (const [i, spec] of bad.entries()) {
        const refused = await host.call('b', CREATE_FN, [`a.bad${i}xxxxxxxxxxxxxxxxxx`, `a.fork${i}xxxxxxxxxxxxxxxxx`, spec]).catch((error: unknown) => error);
        t.true(refused instanceof RRefError && refused.code === 'RREF_CREATION_FAILED', `${JSON.stringify(spec)}: ${String(refused)}`);
      }
      t.is(b!.rrefStats().owners, 0, 'nothing kept for the refused requests');
      const fine = a!.remote('b', Saved, [], { maxRestarts: 1 });
      t.is(await fine.rpcSync().inc(4), 4);
    } finally {
      await stopAll([a!, b!]);
    }
  });
}
