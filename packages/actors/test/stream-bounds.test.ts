/**
 * Streams are bounded like the other state peers make on a worker: a
 * consumer that is not a member and returns no credit loses its stream after
 * the lease, one peer may keep only `streamsPerPeer` open, and a caller from
 * another NATS account is refused up front.
 */
import test from 'ava';
import { lastValueFrom, toArray } from 'rxjs';
import { defaultCodec, PermissionDeniedError, StreamError, tf, type Transport } from '@tensorbus/core';
import { initRpc, type RpcAgent } from '../src/index.js';
import { CallAuth } from '../src/agent/call-auth.js';
import { CallClient } from '../src/agent/call-client.js';
import { Identity } from '../src/agent/identity.js';
import { hostOf, STREAMS, streamSubject } from '../src/internal.js';
import { startAccountsServer } from './fixtures/accounts-server.js';
import { addNumbers, countTo } from './fixtures/functions.js';
import { heldTensorStream } from './fixtures/peer-functions.js';
import { eventually, newGroup, stopAll, transportKinds } from './helpers.js';

let groups = 0;

/** A raw caller on `transport` that is not a member: it claims whatever name it is told to. */
function stranger(transport: Transport): CallClient {
  return new CallClient(transport, 'stranger', undefined, () => 10_000, new CallAuth(new Identity(), 'stranger', () => undefined));
}

/** Opens a stream of `heldTensorStream(n)` on `to` as `name`, with `credit`; never returns any. */
function openAs(client: CallClient, to: string, name: string, n: number, credit: number): Promise<unknown> {
  return client.openStream(to, 'test.peer.heldTensorStream', [n], { from: name }, { id: 1, subject: streamSubject(name, 1), credit });
}

const active = (agent: RpcAgent) => hostOf(agent).plugin(STREAMS).producers.active;

for (const kind of transportKinds()) {
  const title = (text: string) => `${kind.name} - stream bounds - ${text}`;

  async function group(names: string[], leaseMs: number, streamsPerPeer = 256): Promise<{ agents: RpcAgent[]; raw: Transport }> {
    const g = newGroup(kind);
    const agents = await Promise.all(names.map((name) => initRpc({ name, transport: g.transport(), heartbeatMs: 100, failureTimeoutMs: 1_000, peerLimits: { leaseMs, streamsPerPeer } })));
    await eventually(() => agents.every((agent) => agent.workers().length === names.length));
    return { agents, raw: await g.transport() };
  }

  test.serial(title('a consumer that is not a member and returns no credit loses its stream after the lease; the producer disposes what it held'), async (t) => {
    const { agents, raw } = await group(['w'], 1_000);
    t.teardown(async () => {
      await stopAll(agents);
      await raw.close();
    });
    const [w] = agents as [RpcAgent];
    const baseline = tf.memory().numTensors;
    const frames: unknown[][] = [];
    raw.subscribe(streamSubject('o', 1), (message) => {
      const frame = defaultCodec.decode(message.data) as unknown[];
      tf.dispose(frame[2] as tf.Tensor);
      frames.push(frame);
    });
    await raw.flush();
    const openedAt = Date.now();
    await openAs(stranger(raw), 'w', 'o', 100, 2);
    await eventually(() => frames.length === 2);
    t.is(active(w), 1, 'the producer waits for credit');
    t.true(tf.memory().numTensors > baseline, 'and holds its tensor meanwhile');
    await eventually(() => active(w) === 0, 5_000);
    t.true(Date.now() - openedAt >= 1_000, 'not before the lease');
    t.is(tf.memory().numTensors, baseline, 'what the stream held is disposed');
    await eventually(() => frames.length === 3);
    const [kindOf, , error] = frames[2] as [number, number, { code: string }];
    t.is(kindOf, 2, 'the consumer is told: FAIL');
    t.is(error.code, 'STREAM_LEASE_EXPIRED');
  });

  test.serial(title("a member's stream outlives the lease: a slow member consumer keeps it"), async (t) => {
    const { agents, raw } = await group(['w', 'm'], 500);
    t.teardown(async () => {
      await stopAll(agents);
      await raw.close();
    });
    const [w, m] = agents as [RpcAgent, RpcAgent];
    const seen: number[] = [];
    for await (const item of m.rpcStream<tf.Tensor>('w', heldTensorStream, [4], { credit: 1 })) {
      seen.push((await item.data())[0]!);
      item.dispose();
      if (seen.length === 1) await new Promise((resolve) => setTimeout(resolve, 1_200));
    }
    t.deepEqual(seen, [0, 1, 2, 3]);
    t.is(active(w), 0);
  });

  test.serial(title('one peer may keep only streamsPerPeer streams open, whatever names it claims; a member opens its own'), async (t) => {
    const { agents, raw } = await group(['w', 'm'], 60_000, 3);
    const [w, m] = agents as [RpcAgent, RpcAgent];
    t.teardown(() => raw.close());
    const baseline = tf.memory().numTensors;
    const outsider = stranger(raw);
    for (const name of ['o0', 'o1', 'o2']) await openAs(outsider, 'w', name, 10, 1);
    const refused = await t.throwsAsync(openAs(outsider, 'w', 'o3', 10, 1), { instanceOf: StreamError });
    t.is(refused!.code, 'STREAM_LIMIT_EXCEEDED');
    t.is(active(w), 3, 'the refused stream keeps nothing');
    t.deepEqual(await lastValueFrom(m.rpcStream<number>('w', countTo, [5, 'bounds']).pipe(toArray())), [0, 1, 2, 3, 4], "the member's own budget");
    await stopAll(agents);
    t.is(active(w), 0);
    await eventually(() => tf.memory().numTensors === baseline);
    t.pass();
  });
}

test.serial('nats accounts - stream bounds - a client from another account is refused a stream up front with PERMISSION_DENIED; the worker keeps nothing, calls still work', async (t) => {
  const namespace = `sacct${process.pid}x${++groups}`;
  const accounts = await startAccountsServer(namespace, 'w');
  t.teardown(() => accounts.stop());
  const w = await initRpc({ name: 'w', transport: accounts.connect('svc'), heartbeatMs: 100, failureTimeoutMs: 1_000 });
  const c = await initRpc({ name: 'c', transport: accounts.connect('c1'), heartbeatMs: 100, failureTimeoutMs: 1_000 });
  t.teardown(() => stopAll([w, c]));
  t.is(await c.rpcSync('w', addNumbers, [1, 2], { timeoutMs: 10_000 }), 3, 'the import carries calls');
  const startedAt = Date.now();
  const outcome = await Promise.race([
    lastValueFrom(c.rpcStream<number>('w', countTo, [5, 'accounts'], { timeoutMs: 10_000 }).pipe(toArray())).then(
      (items) => ({ items }),
      (error: unknown) => ({ error }),
    ),
    new Promise<{ hung: true }>((resolve) => setTimeout(() => resolve({ hung: true }), 8_000).unref()),
  ]);
  t.true('error' in outcome && outcome.error instanceof PermissionDeniedError, `refused with PERMISSION_DENIED, got ${JSON.stringify(outcome)}`);
  t.true(Date.now() - startedAt < 5_000, 'up front, not after a timeout');
  t.is(active(w), 0);
  t.is(await c.rpcSync('w', addNumbers, [2, 3], { timeoutMs: 10_000 }), 5);
});
