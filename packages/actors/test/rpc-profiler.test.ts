/**
 * The RPC profiler over every transport: per-call events with worker,
 * function, bytes and phases (rpc_test.py test_profiler_*), Chrome trace
 * export, nothing measured outside a profile, and the callee's report taken
 * as hostile input.
 */
import test from 'ava';
import { RemoteError, tf } from '@tensorbus/core';
import { remoteFunction } from '../src/index.js';
import { callScope } from '../src/agent/host.js';
import { checkRemoteTiming, type ChromeTraceEvent } from '../src/agent/profiler.js';
import { echo, fail, sleep } from './fixtures/functions.js';
import { startGroup, stopAll, stopEverything, transportKinds } from './helpers.js';

test.after.always(stopEverything);

/** Whether the call that runs this was asked for a timing report. */
const askedForReport = remoteFunction('prof.askedForReport', () => callScope.getStore()?.meta.prof === 1);

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - profiler - ${title}`;

  test(t('records each call with worker, function, bytes and where its time went; exports a Chrome trace'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a] = agents;
    const big = tf.ones([10_000]);
    const profile = await a!.profile(async () => {
      await a!.rpcSync('b', sleep, [40]);
      const back = (await a!.rpcSync('b', echo, [big])) as tf.Tensor;
      back.dispose();
      await a!.rpcAsync('b', fail, ['profiled']).then(() => undefined, () => undefined);
    });
    tt.false(profile.recording);
    tt.is(profile.events.length, 3);
    const [slept, echoed, failed] = profile.events as [typeof profile.events[0], typeof profile.events[0], typeof profile.events[0]];
    tt.is(slept.name, 'rpc#test.sleep(a -> b)');
    tt.is(slept.worker, 'b');
    tt.is(slept.caller, 'a');
    tt.is(slept.function, 'test.sleep');
    tt.true(slept.remoteUs! >= 35_000, `the callee ran ${slept.remoteUs} µs`);
    tt.true(slept.queueUs! >= 0);
    tt.true(slept.durationUs >= slept.remoteUs!);
    for (const e of profile.events) {
      const phases = e.encodeUs + (e.queueUs ?? 0) + (e.remoteUs ?? 0) + e.transportUs + e.decodeUs;
      tt.true(Math.abs(phases - e.durationUs) < 1, `${e.function}: phases ${phases} µs add up to ${e.durationUs} µs`);
      tt.true(e.encodeUs >= 0 && e.transportUs >= 0 && e.decodeUs >= 0, `${e.function}: no negative phase`);
    }
    tt.true(echoed.requestBytes >= 40_000 && echoed.responseBytes >= 40_000, `echo of 40 kB: ${echoed.requestBytes} / ${echoed.responseBytes} bytes`);
    tt.true(slept.requestBytes > 0 && slept.requestBytes < 1_000);
    tt.true(echoed.startUs >= slept.startUs + slept.durationUs - 1, 'events in order, times from the profile start');
    tt.is(failed.error, 'REMOTE_ERROR');
    tt.is(failed.remoteUs, undefined, 'an error reply carries no report');

    const trace = JSON.parse(JSON.stringify(profile.toChromeTrace())) as { traceEvents: ChromeTraceEvent[] };
    const complete = trace.traceEvents.filter((e) => e.ph === 'X');
    tt.true(complete.length >= 3 * 3);
    for (const e of complete) {
      tt.true(typeof e.ts === 'number' && e.ts >= 0 && typeof e.dur === 'number' && e.dur >= 0, `${e.name}: ts/dur in µs`);
      tt.true(Number.isInteger(e.pid) && Number.isInteger(e.tid));
    }
    const call = complete.find((e) => e.name === 'rpc#test.sleep(a -> b)')!;
    const remote = complete.find((e) => e.name === 'test.sleep' && e.cat === 'rpc.callee')!;
    tt.truthy(call);
    tt.truthy(remote);
    tt.not(remote.pid, call.pid, 'the callee has a process of its own in the trace');
    const names = trace.traceEvents.filter((e) => e.ph === 'M').map((e) => e.args!.name);
    tt.deepEqual(names.sort(), ['a', 'b']);
    tt.deepEqual(profile.byFunction().map((r) => [r.function, r.calls]).sort(), [['test.echo', 1], ['test.fail', 1], ['test.sleep', 1]]);
    big.dispose();
    await stopAll(agents);
  });

  test(t('only calls while a profile records are measured; unprofiled calls ask for no report'), async (tt) => {
    const agents = await startGroup(kind, ['a', 'b']);
    const [a] = agents;
    tt.false(await a!.rpcSync('b', askedForReport, []));
    const profile = a!.startProfile({ maxEvents: 2 });
    tt.true(await a!.rpcSync('b', askedForReport, []));
    await a!.rpcSync('b', askedForReport, []);
    await a!.rpcSync('b', askedForReport, []);
    profile.stop();
    tt.false(await a!.rpcSync('b', askedForReport, []));
    tt.is(profile.events.length, 2);
    tt.is(profile.dropped, 1, 'beyond maxEvents calls are counted, not kept');
    await tt.throwsAsync(a!.profile(() => a!.rpcSync('b', fail, ['inside'])), { instanceOf: RemoteError });
    tt.false(await a!.rpcSync('b', askedForReport, []), 'a profile whose block threw stopped');
    const timedOut = await a!.profile(() => a!.rpcSync('b', sleep, [400], { timeoutMs: 50 }).catch(() => undefined));
    tt.is(timedOut.events.length, 1);
    tt.is(timedOut.events[0]!.error, 'RPC_TIMEOUT', 'a call that got no reply is recorded with its error');
    tt.is(timedOut.events[0]!.remoteUs, undefined);
    await stopAll(agents);
  });
}

test('profiler - a callee\'s timing report is taken only as two finite non-negative numbers within the round trip', (t) => {
  t.deepEqual(checkRemoteTiming({ q: 10, x: 500 }, 1_000), { queueUs: 10, remoteUs: 500 });
  for (const hostile of [null, 7, 'x', [], { q: -1, x: 1 }, { q: 1, x: Number.NaN }, { q: 1, x: Infinity }, { q: '1', x: 1 }, { q: 1 }, { q: 600, x: 600 }, { q: 1e300, x: 0 }]) {
    t.is(checkRemoteTiming(hostile, 1_000), undefined, JSON.stringify(hostile));
  }
});
