import test from 'ava';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { connect, headers } from 'nats';
import { tf } from '@tensorbus/core';
import { GET_BYTES, H_CHUNK, H_DIRECT, H_PULL, H_SIZE, H_TRANSFER, hostId, REPLY_OK, replyHeader } from '@tensorbus/nats-transport/internal';
import { startProcessGroup, stopProcessGroups } from './process-group.js';
import { add, whoAmI } from './fixtures/functions.js';
import { stop } from './fixtures/worker-functions.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));

test.serial('hostile data plane - announcements pointing at a port that answers 2^50 bytes kill no worker; all keep serving', async (t) => {
  // Three worker processes and this one (p0).
  const { agent, children, serverUrl, namespace } = await startProcessGroup(workerScript, 4);
  let connections = 0;
  let gets = 0;
  const hostile = createServer((socket) => {
    connections++;
    socket.on('error', () => undefined);
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= GET_BYTES) {
        gets++;
        // A reply "of 2^50 bytes", and then some bytes of it.
        socket.write(Buffer.concat([replyHeader(pending.readUInt32BE(1), REPLY_OK, 2 ** 50), Buffer.alloc(4096, 1)]));
        pending = pending.subarray(GET_BYTES);
      }
    });
  });
  hostile.listen(0, '127.0.0.1');
  await once(hostile, 'listening');
  const port = (hostile.address() as AddressInfo).port;
  const nc = await connect({ servers: serverUrl });
  let transfers = 0;
  const announce = (subject: string, host: string, reply?: string) => {
    const h = headers();
    h.set(H_TRANSFER, `hostile.${++transfers}`);
    h.set(H_SIZE, '1000000');
    h.set(H_CHUNK, '65536');
    h.set(H_PULL, `hostile.pull.${transfers}`);
    h.set(H_DIRECT, `${hostId()} ${host}:${port} ${'ab'.repeat(16)}`);
    nc.publish(`${namespace}.${subject}`, new Uint8Array(0), { headers: h, reply });
  };
  // On the members subject (every worker gets it), on one worker's call subject, and naming 0.0.0.0.
  announce('tb.members', '127.0.0.1');
  announce('tb.call.p1', '127.0.0.1', `${namespace}.hostile.reply`);
  announce('tb.members', '0.0.0.0');
  await nc.flush();
  const deadline = Date.now() + 5_000;
  while (gets < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  t.true(gets >= 4, `the workers fetched from the hostile port ${gets} times (each member, p1 perhaps twice)`);
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.deepEqual(children.map((c) => c.exitCode), [null, null, null], 'every worker process is alive');
  // They keep serving a well-behaved caller, small and large.
  for (const name of ['p1', 'p2', 'p3']) t.is(await agent.rpcSync(name, whoAmI, [], { timeoutMs: 20_000 }), name);
  const big = tf.ones([512, 1024]);
  const sum = await agent.rpcSync('p2', add, [big, big], { timeoutMs: 20_000 });
  t.is((await sum.sum().data())[0], 2 * 512 * 1024);
  tf.dispose([big, sum]);
  const before = connections;
  announce('tb.members', '0.0.0.0');
  await nc.flush();
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.is(connections, before, 'an offer naming 0.0.0.0 is refused before anything connects');
  await nc.close();
  hostile.close();
  await Promise.all(['p1', 'p2', 'p3'].map((name) => agent.rpcSync(name, stop, [])));
  await agent.shutdown({ timeoutMs: 10_000 });
  const codes = await Promise.all(children.map(async (c) => (c.exitCode ?? (await once(c, 'exit'))[0]) as number));
  t.deepEqual(codes, [0, 0, 0]);
});
