import test from 'ava';
import { RpcTimeoutError, ShutdownError } from '@tensorbus/core';
import { initRpc } from '../src/index.js';
import { sleep } from './fixtures/functions.js';
import { newGroup, startGroup, transportKind, transportKinds } from './helpers.js';
import { stopEverything } from './helpers.js';

test.after.always(stopEverything);

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - shutdown - ${title}`;

  test(t('graceful shutdown in a static group waits for uneven workloads everywhere'), async (tt) => {
    const agents = await startGroup(kind, ['s0', 's1', 's2'], { worldSize: 3 });
    const results: unknown[] = [];
    // s1 keeps sending work to s2 after s0 has already asked to shut down.
    const work = (async () => {
      for (let i = 0; i < 5; i++) results.push(await agents[1]!.rpcSync('s2', sleep, [60, i]));
    })();
    const long = agents[0]!.rpcAsync('s2', sleep, [250, 'long']);
    const done = Promise.all(agents.map(async (agent, i) => {
      if (i === 1) await work;
      await agent.shutdown({ timeoutMs: 10_000 });
      return Date.now();
    }));
    const finished = await done;
    tt.is(await long, 'long');
    tt.deepEqual(results, [0, 1, 2, 3, 4]);
    tt.true(Math.max(...finished) - Math.min(...finished) < 1_000, 'all left together');
  });

  test(t('graceful shutdown that cannot finish names whom it waited for, and still leaves'), async (tt) => {
    const agents = await startGroup(kind, ['t0', 't1'], { worldSize: 2 });
    const error = await tt.throwsAsync(agents[0]!.shutdown({ timeoutMs: 300 }), { instanceOf: RpcTimeoutError });
    tt.regex(error!.message, /t1/);
    await tt.throwsAsync(async () => agents[0]!.rpcSync('t1', sleep, [1]), { instanceOf: ShutdownError });
    await agents[1]!.shutdown({ graceful: false });
  });

  test(t('non-graceful shutdown leaves at once and fails its pending calls'), async (tt) => {
    const group = newGroup(kind);
    const a = await initRpc({ name: 'ng-a', transport: group.transport() });
    const b = await initRpc({ name: 'ng-b', transport: group.transport() });
    const pending = tt.throwsAsync(a.rpcSync('ng-b', sleep, [5_000]), { instanceOf: ShutdownError });
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await a.shutdown({ graceful: false });
    await pending;
    tt.true(Date.now() - started < 2_500, `failed after ${Date.now() - started} ms`);
    await b.shutdown({ graceful: false });
  });

  test(t('graceful shutdown in a dynamic group drains its own calls'), async (tt) => {
    const group = newGroup(kind);
    const a = await initRpc({ name: 'd-a', transport: group.transport() });
    const b = await initRpc({ name: 'd-b', transport: group.transport() });
    const pending = a.rpcSync('d-b', sleep, [200, 'drained']);
    await a.shutdown();
    tt.is(await pending, 'drained');
    await b.shutdown();
  });
}

test('local - shutdown - a transport whose flush and close never complete does not hold shutdown for good', async (tt) => {
  const group = newGroup(transportKind('local'));
  const transport = await group.transport();
  const agent = await initRpc({ name: 'stuck', transport });
  // As a NATS connection stuck reconnecting: neither settles.
  transport.flush = () => new Promise<void>(() => undefined);
  transport.close = () => new Promise<void>(() => undefined);
  const started = Date.now();
  await agent.shutdown();
  const took = Date.now() - started;
  tt.true(took >= 2_000 && took < 10_000, `shutdown returned after ${took} ms`);
  await tt.throwsAsync(async () => agent.rpcSync('stuck', sleep, [1]), { instanceOf: ShutdownError });
});
