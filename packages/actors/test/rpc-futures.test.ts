/**
 * RpcFuture.allSettled [torch.futures.collect_all] over calls on every transport.
 */
import test from 'ava';
import { RemoteError, RpcFuture } from '@tensorbus/core';
import { addNumbers, fail, sleep } from './fixtures/functions.js';
import { startGroup, stopAll, stopEverything, transportKinds } from './helpers.js';

test.after.always(stopEverything);

for (const kind of transportKinds()) {
  const t = (title: string) => `${kind.name} - futures - ${title}`;

  test(t('RpcFuture.allSettled of calls to several workers waits for each and reports every outcome in order'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b', 'c']);
    const [a] = agents;
    const started = Date.now();
    const settled = RpcFuture.allSettled([
      a!.rpcAsync('b', sleep, [150, 'slow']),
      a!.rpcAsync('c', fail, ['one failed']),
      a!.rpcAsync('c', addNumbers, [2, 3]),
    ]);
    const results = await settled;
    tt.true(Date.now() - started >= 140, 'it waited for the slow call despite the early failure');
    tt.deepEqual(results[0], { status: 'fulfilled', value: 'slow' });
    tt.is(results[1].status, 'rejected');
    const reason = (results[1] as PromiseRejectedResult).reason as RemoteError;
    tt.true(reason instanceof RemoteError);
    tt.is(reason.worker, 'c');
    tt.deepEqual(results[2], { status: 'fulfilled', value: 5 });
    await stopAll(agents);
  });
}
