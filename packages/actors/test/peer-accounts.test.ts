/**
 * Bounds on what callers that are not members make on a worker are counted
 * by what the caller cannot choose (the NATS account it came through), not by
 * the name it claims: every unverified caller of one account shares one
 * budget, and members keep their own.
 */
import test from 'ava';
import { tf, type Transport } from '@tensorbus/core';
import { initRpc, type RpcAgent, type RRef } from '../src/index.js';
import { CallAuth } from '../src/agent/call-auth.js';
import { CallClient } from '../src/agent/call-client.js';
import { Identity } from '../src/agent/identity.js';
import { startAccountsServer } from './fixtures/accounts-server.js';
import { eventually, newGroup, stopAll, transportKinds } from './helpers.js';

let groups = 0;

/** A raw caller on `transport` that is not a member: it claims whatever name it is told to. */
function stranger(transport: Transport): CallClient {
  return new CallClient(transport, 'stranger', undefined, () => 10_000, new CallAuth(new Identity(), 'stranger', () => undefined));
}

/** Asks `to` for one RRef of a small tensor per name in `names`, claiming that name each time; counts what was made and refused. */
async function createUnder(client: CallClient, to: string, names: string[]): Promise<{ made: number; refused: string[] }> {
  let made = 0;
  const refused: string[] = [];
  for (const [i, name] of names.entries()) {
    try {
      await client.call(to, 'tb.rref.create', [`${name}.x.${i}`, `${name}.f.${i}`, { fn: 'tf.ones', args: [[4]] }], { from: name });
      made++;
    } catch (error) {
      refused.push((error as { code?: string }).code ?? String(error));
    }
  }
  return { made, refused };
}

const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const limits = { rrefsPerPeer: 5, leaseMs: 1_500 };

for (const kind of transportKinds('without-tcp')) {
  test.serial(`${kind.name} - peer bounds - unverified callers share one RRef budget however many names they claim; a member keeps its own`, async (t) => {
    const group = newGroup(kind);
    const agents = await Promise.all(['w', 'm'].map((name) => initRpc({ name, transport: group.transport(), heartbeatMs: 100, failureTimeoutMs: 1_000, peerLimits: limits })));
    t.teardown(() => stopAll(agents));
    const [w, m] = agents as [RpcAgent, RpcAgent];
    await eventually(() => w.workers().length === 2 && m.workers().length === 2);
    const baseline = tf.memory().numTensors;
    const outsiderTransport = await group.transport();
    const outsider = stranger(outsiderTransport);
    // Its own connection too: an open one keeps the test process from exiting.
    t.teardown(async () => {
      outsider.failEverything(new Error('test over') as never);
      await outsiderTransport.close();
    });
    const claimed = await createUnder(outsider, 'w', names('n', 10));
    t.is(claimed.made, 5, 'ten claimed names got one budget of 5 in total');
    t.deepEqual(claimed.refused, Array(5).fill('RREF_LIMIT_EXCEEDED'));
    t.deepEqual((await createUnder(outsider, 'w', ['m'])).refused, ['RREF_LIMIT_EXCEEDED'], "claiming a member's name gets no more");
    // The member that is shown is counted under its own name: its whole budget is there.
    const refs = Array.from({ length: 5 }, () => m.remote('w', tf.ones, [[4]]) as RRef<tf.Tensor>);
    for (const ref of refs) (await ref.toHere()).dispose();
    t.is(w.rrefStats().owners, 10);
    await Promise.all(refs.map((ref) => ref.release()));
    // The strangers' RRefs go with their lease.
    await eventually(() => w.rrefStats().owners === 0, 10_000);
    t.is(tf.memory().numTensors, baseline);
  });
}

test.serial('nats accounts - peer bounds - callers from another account share one RRef budget per account, whatever names and connections they use', async (t) => {
  const namespace = `acct${process.pid}x${++groups}`;
  const accounts = await startAccountsServer(namespace, 'w');
  t.teardown(() => accounts.stop());
  const w = await initRpc({ name: 'w', transport: accounts.connect('svc'), heartbeatMs: 100, failureTimeoutMs: 1_000, peerLimits: { ...limits, leaseMs: 60_000 } });
  t.teardown(() => stopAll([w]));
  const connections = await Promise.all((['c1', 'c1', 'c2', 'svc'] as const).map((user) => accounts.connect(user)));
  // Closed before the server stops (teardowns run last first): an open connection keeps the test process from exiting.
  t.teardown(() => Promise.all(connections.map((transport) => transport.close())));
  const [c1, c1again, c2, local] = connections.map(stranger);
  const first = await createUnder(c1!, 'w', names('a', 10));
  t.is(first.made, 5, 'ten claimed names from account C1 got one budget of 5');
  t.deepEqual(first.refused, Array(5).fill('RREF_LIMIT_EXCEEDED'));
  t.is((await createUnder(c1again!, 'w', names('b', 3))).made, 0, 'a second connection of C1 shares its budget');
  t.is((await createUnder(c2!, 'w', names('c', 6))).made, 5, 'account C2 has a budget of its own');
  t.is((await createUnder(local!, 'w', names('d', 6))).made, 5, "the worker's own account's strangers have theirs");
  t.is(w.rrefStats().owners, 15);
});

test.serial('nats accounts - rref - a client of another account uses the RRef it created; a client of a third account cannot, knowing its id', async (t) => {
  const namespace = `acct${process.pid}x${++groups}`;
  const accounts = await startAccountsServer(namespace, 'w');
  t.teardown(() => accounts.stop());
  const w = await initRpc({ name: 'w', transport: accounts.connect('svc'), heartbeatMs: 100, failureTimeoutMs: 1_000 });
  t.teardown(() => stopAll([w]));
  const connections = await Promise.all((['c1', 'c2'] as const).map((user) => accounts.connect(user)));
  t.teardown(() => Promise.all(connections.map((transport) => transport.close())));
  const [c1, c2] = connections.map(stranger) as [CallClient, CallClient];
  await c1.call('w', 'tb.rref.create', ['k1.x.1', 'k1.f.1', { fn: 'tf.ones', args: [[3]] }], { from: 'k1' });
  const fetched = (await c1.call('w', 'tb.rref.fetch', ['k1.x.1'], { from: 'k1' })) as tf.Tensor;
  t.deepEqual([...(await fetched.data())], [1, 1, 1], 'its creator, through its account, fetches the value');
  fetched.dispose();
  await t.throwsAsync(c2.call('w', 'tb.rref.fetch', ['k1.x.1'], { from: 'k1' }), { message: /holds no RRef k1\.x\.1/ }, 'another account, claiming the same name, is told the id is unknown');
});
