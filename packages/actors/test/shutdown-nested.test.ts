/**
 * Graceful shutdown across real OS processes while work nobody awaits is
 * still spreading (PyTorch's test_multi_layer_nested_async_rpc): every rank
 * waits until the whole group is quiet, then every rank ends.
 */
import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { startWorkerProcess } from './process-group.js';

const script = fileURLToPath(new URL('./fixtures/nested-async-worker.js', import.meta.url));

test('nats processes - shutdown - 4 processes each firing a 20-hop chain of un-awaited rpcAsync all shut down gracefully once every hop ran', async (t) => {
  const server = await sharedNatsServer();
  const size = 4;
  const ttl = 20;
  const env = { NATS_URL: server.url, TENSORBUS_NAMESPACE: `nested${process.pid}`, TENSORBUS_WORLD_SIZE: String(size) };
  const children = Array.from({ length: size }, (_, rank) => startWorkerProcess(script, { ...env, TENSORBUS_NAME: `p${rank}`, TENSORBUS_RANK: String(rank) }, ['--ttl', String(ttl)]));
  const outputs = children.map((child) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d));
    return () => out;
  });
  // Four processes load TensorFlow.js first: on a loaded 2-core machine that alone takes tens of seconds.
  const guard = setTimeout(() => children.forEach((c) => c.kill('SIGKILL')), 120_000);
  try {
    const codes = await Promise.all(children.map(async (c) => (c.exitCode ?? (await once(c, 'exit'))[0]) as number | null));
    t.deepEqual(codes, [0, 0, 0, 0], `every rank ended its graceful shutdown (null: killed after 120 s): ${outputs.map((o) => o().trim()).join(' | ')}`);
    const served = outputs.map((o) => Number(/served (\d+)/.exec(o())?.[1] ?? NaN));
    t.is(served.reduce((a, b) => a + b, 0), size * ttl, `every hop of every chain ran before the group left: ${served.join(', ')}`);
  } finally {
    clearTimeout(guard);
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});
