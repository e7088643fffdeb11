import test from 'ava';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { natsTransport } from '@tensorbus/nats-transport';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { initRpc } from '../src/index.js';
import { MEMBERS_SUBJECT } from '../src/agent/subjects.js';
import { decodeWithoutTensors } from '../src/tensors.js';
import { whoAmI } from './fixtures/functions.js';
import { stop } from './fixtures/worker-functions.js';
import { startWorkerProcess } from './process-group.js';

const idWorker = fileURLToPath(new URL('./fixtures/id-worker.js', import.meta.url));
const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));

test.serial('nats processes - a process claiming a rank another process holds is refused with DuplicateWorkerError; the group forms with the holder', async (t) => {
  const server = await sharedNatsServer();
  const namespace = `rank${process.pid}`;
  const env = { NATS_URL: server.url, TENSORBUS_NAMESPACE: namespace, TENSORBUS_WORLD_SIZE: '2' };
  const holder = startWorkerProcess(workerScript, { ...env, TENSORBUS_NAME: 'holder', TENSORBUS_RANK: '1' });
  let holderOut = '';
  holder.stdout!.on('data', (d: Buffer) => (holderOut += d.toString()));
  // The holder has joined (it then waits for rank 0) once it beats: watch the members subject for its heartbeat.
  const probe = await natsTransport({ servers: server.url, namespace });
  await new Promise<void>((resolve) => {
    const subscription = probe.subscribe(MEMBERS_SUBJECT, (message) => {
      const announcement = decodeWithoutTensors(message.data) as { k?: string; n?: string };
      if (announcement.k === 'hb' && announcement.n === 'holder') {
        subscription.unsubscribe();
        resolve();
      }
    });
  });
  await probe.close();
  const rival = startWorkerProcess(workerScript, { ...env, TENSORBUS_NAME: 'rival', TENSORBUS_RANK: '1' });
  let rivalErr = '';
  rival.stderr!.on('data', (d: Buffer) => (rivalErr += d.toString()));
  const [code] = (await once(rival, 'exit')) as [number];
  t.not(code, 0, 'the rival process failed to start');
  t.regex(rivalErr, /DuplicateWorkerError|rank 1 .*already taken/);
  const agent = await initRpc({ name: 'zero', rank: 0, worldSize: 2, transport: natsTransport({ servers: server.url, namespace }) });
  t.deepEqual(agent.workers(), [{ name: 'zero', id: 0 }, { name: 'holder', id: 1 }]);
  t.is(await agent.rpcSync(1, whoAmI, []), 'holder');
  t.regex(holderOut, /ready holder 1/);
  await agent.rpcSync('holder', stop, []);
  await agent.shutdown({ timeoutMs: 10_000 });
  if (holder.exitCode === null) await once(holder, 'exit');
});

test.serial('nats processes - four processes joining a dynamic group at once get unique ids, final when initRpc resolves', async (t) => {
  const server = await sharedNatsServer();
  const namespace = `ids${process.pid}`;
  const names = ['q0', 'q1', 'q2', 'q3'];
  // Node and TensorFlow.js start in a second or two on a loaded machine: all join together after that.
  const startAt = String(Date.now() + 4_000);
  const children = names.map((name) =>
    startWorkerProcess(idWorker, { NATS_URL: server.url, TENSORBUS_NAMESPACE: namespace, TENSORBUS_NAME: name }, ['--hold', '2500', '--expect', '4', '--start-at', startAt]),
  );
  const outputs = children.map((child) => {
    let text = '';
    child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
    return () => text;
  });
  const codes = await Promise.all(children.map(async (c) => (c.exitCode ?? (await once(c, 'exit'))[0]) as number));
  t.deepEqual(codes, [0, 0, 0, 0]);
  const joined = new Map<string, number>();
  const after = new Map<string, number>();
  const views = new Map<string, unknown>();
  for (const read of outputs) {
    for (const line of read().split('\n')) {
      const parts = line.split(' ');
      if (parts[0] === 'joined') joined.set(parts[1]!, Number(parts[2]));
      if (parts[0] === 'view') views.set(parts[1]!, JSON.parse(parts.slice(2).join(' ')));
      if (parts[0] === 'after') after.set(parts[1]!, Number(parts[2]));
    }
  }
  const ids = names.map((name) => joined.get(name));
  t.log(`ids at initRpc: ${ids.join(",")}; after: ${names.map((n) => after.get(n)).join(",")}`);
  t.is(new Set(ids).size, 4, `ids at initRpc: ${ids.join(',')}`);
  t.true(ids.every((id) => id !== undefined && id >= 0 && id < 4), `ids at initRpc: ${ids.join(',')}`);
  for (const name of names) {
    t.is(after.get(name), joined.get(name), `${name} kept its id`);
    t.deepEqual(views.get(name), names.map((n) => ({ name: n, id: joined.get(n)! })).sort((a, b) => a.id - b.id), `${name}'s view`);
  }
});
