/**
 * What a call carries so that a call back into a browser tab from the call
 * the tab serves is refused at once (agent/reentrancy.ts; the refusal itself
 * is tested in headless Chromium by browser-agent.test.ts): a Node worker
 * passes `meta.waitedBy` on to the calls it makes while serving, and a
 * malformed one from the wire is refused before anything runs.
 */
import test from 'ava';
import { defaultCodec, SerializationError } from '@tensorbus/core';
import { errorFromWire, type WireError } from '@tensorbus/core/internal';
import { currentAgent, remoteFunction } from '../src/index.js';
import { callScope } from '../src/agent/host.js';
import { callSubject } from '../src/agent/subjects.js';
import { ERROR_UNCOUNTED, OK_UNCOUNTED } from '../src/agent/call-protocol.js';
import { MAX_WAITED_BY, waitedByOnward, type WaitedBy } from '../src/agent/reentrancy.js';
import { startGroup, stopEverything, transportKinds } from './helpers.js';

/** The `waitedBy` the call being served carries (null when none). */
const seenWaitedBy = remoteFunction('re.seenWaitedBy', () => callScope.getStore()!.meta.waitedBy ?? null);
/** Calls `to`'s seenWaitedBy from within the call it serves. */
const passOn = remoteFunction('re.passOn', (to: string) => currentAgent().rpcSync(to, seenWaitedBy, []));

test.after.always(stopEverything);

const full: WaitedBy = Array.from({ length: MAX_WAITED_BY }, (_, i) => [`tab${i}`, i + 1]);

for (const kind of transportKinds('without-tcp')) {
  const t = (title: string) => `${kind.name} - reentrancy - ${title}`;

  test.serial(t('a Node worker passes waitedBy on to the calls it makes while serving, unchanged, and adds none of its own'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b', 'c']);
    for (const waitedBy of [[['tab', 3]], full]) {
      const reply = await a!.transport.request(callSubject('b'), defaultCodec.encode([0, 're.passOn', ['c'], { from: 'tab', waitedBy }]), { timeoutMs: 5_000 });
      tt.deepEqual(defaultCodec.decode(reply), [OK_UNCOUNTED, waitedBy]);
    }
    // A call made outside any served call, or inside one that carries none, carries none.
    tt.is(await a!.rpcSync('c', seenWaitedBy, []), null);
    tt.is(await a!.rpcSync('b', passOn, ['c']), null);
  });

  test.serial(t('a call whose waitedBy is malformed is refused with SerializationError before anything runs, and the worker serves on'), async (tt) => {
    const [a] = await startGroup(kind, ['a', 'b', 'c']);
    const hostile: unknown[] = ['tab', 7, [['tab']], [['tab', -1]], [['tab', 1.5]], [['a b', 1]], [[1, 2]], [...full, ['tab', 1]], { 0: ['tab', 1], length: 1 }];
    for (const waitedBy of hostile) {
      const reply = await a!.transport.request(callSubject('b'), defaultCodec.encode([0, 're.passOn', ['c'], { from: 'tab', waitedBy }]), { timeoutMs: 5_000 });
      const [kindOf, wire] = defaultCodec.decode(reply) as [number, WireError];
      tt.is(kindOf, ERROR_UNCOUNTED, JSON.stringify(waitedBy));
      const error = errorFromWire(wire);
      tt.true(error instanceof SerializationError, `${JSON.stringify(waitedBy)}: ${error.message}`);
      tt.regex(error.message, /meta\.waitedBy/);
    }
    tt.is(await a!.rpcSync('b', passOn, ['c']), null, 'served on');
  });
}

test('reentrancy - a tab serving turn n adds itself to the list it passes on, which keeps its newest entries', (t) => {
  t.is(waitedByOnward(undefined, 'tab', undefined), undefined, 'outside a served call, in Node: nothing');
  t.deepEqual(waitedByOnward(undefined, 'tab', 4), [['tab', 4]]);
  t.deepEqual(waitedByOnward({ from: 'n', waitedBy: [['t2', 9]] }, 'tab', 4), [['t2', 9], ['tab', 4]]);
  const onward = waitedByOnward({ from: 'n', waitedBy: full }, 'tab', 4)!;
  t.is(onward.length, MAX_WAITED_BY);
  t.deepEqual(onward.at(-1), ['tab', 4]);
  t.deepEqual(onward[0], full[1]);
});
