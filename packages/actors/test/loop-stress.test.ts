/**
 * The event loop keeps turning under the pattern that once stalled a process
 * for minutes: two agents per process over NATS, long async calls with short
 * ones meanwhile ("an async function that waits does not hold up other calls
 * to the same worker"), large tensors among them, on every same-host route
 * (the plain bus, direct TCP routes, shared memory). A watchdog timer in each
 * process must keep firing, and every call must complete.
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { tf } from '@tensorbus/core';
import { natsTransport, type DirectStats } from '@tensorbus/nats-transport';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { initRpc, type RpcAgent } from '../src/index.js';
import { longestGap, plusOne, waitAwhile, watchdog } from './fixtures/stress-functions.js';
import { ROUTES, transportFor } from './fixtures/stress-routes.js';
import { eventually } from './helpers.js';
import { startWorkerProcess } from './process-group.js';

const pair = fileURLToPath(new URL('./fixtures/stress-pair.js', import.meta.url));

/** Longest the event loop of either process may go without its 10 ms timer firing, ms (the stall held it for minutes). */
const MAX_GAP_MS = 3_000;
/** The long call, ms: six callers' ten short calls each come back well within it, even on a loaded 2-core machine. */
const LONG_MS = 2_000;
/** A call that has not completed by then never will, ms. */
const CALL_GUARD_MS = 20_000;

const statsOf = (agent: RpcAgent) => (agent.transport as unknown as { directStats: DirectStats }).directStats;

for (const route of ROUTES) {
  test.serial(`nats processes - event loop - long calls with short ones meanwhile between two agents per process keep every loop turning and every call completing (${route})`, async (t) => {
    const server = await sharedNatsServer();
    const namespace = `stress${process.pid}${route}`;
    const child = startWorkerProcess(pair, { NATS_URL: server.url, TENSORBUS_NAMESPACE: namespace }, ['q', route]);
    try {
      await once(child.stdout!, 'data');
      const agents = await Promise.all([1, 2].map((i) => initRpc({ name: `p${i}`, transport: natsTransport(transportFor(route, server.url, namespace)) })));
      try {
        await eventually(() => agents.every((a) => a.workers().length === 4), 10_000);
        const big = tf.ones([375_000]); // 1.5 MB: a large frame (filled while read in shared memory)
        watchdog.reset();
        await agents[0]!.rpcSync('q1', longestGap, [true]);
        for (let round = 0; round < 2; round++) {
          await Promise.all(agents.flatMap((caller) => ['q1', 'q2', caller.self.name === 'p1' ? 'p2' : 'p1'].map(async (target) => {
            const long = caller.rpcAsync(target, waitAwhile, [LONG_MS], { timeoutMs: CALL_GUARD_MS });
            for (let i = 0; i < 10; i++) t.is(await caller.rpcSync(target, plusOne, [i], { timeoutMs: CALL_GUARD_MS }), i + 1);
            t.false(long.done(), `the long call to ${target} held up the short ones`);
            const sum = (await caller.rpcSync(target, plusOne, [big], { timeoutMs: CALL_GUARD_MS })) as tf.Tensor;
            t.deepEqual(Array.from((await sum.data()).subarray(0, 2)), [2, 2]);
            sum.dispose();
            t.is(await long, LONG_MS);
          })));
        }
        big.dispose();
        t.true(watchdog.longestGapMs < MAX_GAP_MS, `this process's event loop stood still for ${Math.round(watchdog.longestGapMs)} ms`);
        const childGap = await agents[0]!.rpcSync('q1', longestGap, [], { timeoutMs: CALL_GUARD_MS });
        t.true(childGap < MAX_GAP_MS, `the worker process's event loop stood still for ${Math.round(childGap)} ms`);
        if (route !== 'bus') t.true(statsOf(agents[0]!).calls > 0, 'calls went on direct routes');
        const shared = statsOf(agents[0]!).sharedRequests + statsOf(agents[0]!).sharedReplies;
        if (route === 'shm') t.true(shared > 0, `calls went through shared memory ${JSON.stringify(statsOf(agents[0]!))} ${JSON.stringify(statsOf(agents[1]!))}`);
        else t.is(shared, 0, 'no call went through shared memory');
      } finally {
        await Promise.all(agents.map((a) => a.shutdown({ graceful: false }).catch(() => undefined)));
      }
    } finally {
      child.kill('SIGKILL');
    }
  });
}
