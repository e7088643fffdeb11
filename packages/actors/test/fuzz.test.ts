/**
 * The fuzzer of issue 12's "done when": a worker in its own OS process gets
 * 10,000 hostile messages over NATS (mutations of captured well-formed
 * traffic, and structured messages of every protocol with hostile fields) and
 * 3,000 hostile frames on its data port, while a well-behaved caller keeps
 * calling it. Seeded (TENSORBUS_FUZZ_SEED) and bounded in time. Afterwards
 * the worker is up, every good call got the right answer, and its tensors,
 * tensor bytes and RRef bookkeeping are back at their baseline.
 */
import test from 'ava';
import { once } from 'node:events';
import { connect as connectTcp, createServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { defaultCodec, tf } from '@tensorbus/core';
import { connectRawNats, natsHeaders, type RawNatsConnection } from '@tensorbus/nats-transport/testing';
import { add, countTo, echo, Counter } from './fixtures/functions.js';
import { rrefValue } from './fixtures/rref-functions.js';
import { memoryHere, rrefCountsHere, rrefStatsHere, stop, tensorsHere } from './fixtures/worker-functions.js';
import { hostileCall, hostileControl, hostileFrame, mutate, Random } from './fuzz/hostile-messages.js';
import { startProcessGroup, TIMING, stopProcessGroups } from './process-group.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
const SEED = Number(process.env.TENSORBUS_FUZZ_SEED ?? 12);
const NATS_MESSAGES = 10_000;
const DATA_PORT_FRAMES = 3_000;
/** What non-members make on the worker is dropped after this idle time (peerLimits.leaseMs). */
const LEASE_MS = 2_000;
/** The whole run stops sending at this point, whatever is left. */
const BUDGET_MS = 90_000;

/** A port that answers every fetch with a reply header announcing 2^50 bytes, or junk. */
async function hostilePort(random: Random): Promise<{ port: number; close(): void }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    socket.once('data', (request) => {
      const header = Buffer.alloc(14);
      header[0] = 0x03;
      header.writeUInt32BE(request.length >= 5 ? request.readUInt32BE(1) : 1, 1);
      header[5] = 0;
      header.writeUInt32BE(2 ** 18, 6); // 2^50 bytes
      header.writeUInt32BE(0, 10);
      socket.write(random.next() < 0.5 ? header : Buffer.from(random.bytes(64)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}

/** Sends `frames` hostile frames to a data port over a few connections, each dropped after a while. */
async function fuzzDataPort(random: Random, host: string, port: number, token: Buffer | undefined, subject: string, frames: number, deadline: number): Promise<number> {
  let sent = 0;
  while (sent < frames && Date.now() < deadline) {
    const socket = connectTcp({ host, port });
    socket.on('error', () => undefined);
    socket.on('data', () => undefined);
    await new Promise((resolve) => {
      socket.once('connect', resolve);
      socket.once('close', resolve);
    });
    if (socket.destroyed) break; // the port is gone: the assertions after say why
    for (let i = 0; i < 60 && sent < frames && !socket.destroyed; i++, sent++) {
      socket.write(hostileFrame(random, token, subject));
      if (i % 10 === 9) await new Promise((resolve) => setImmediate(resolve));
    }
    socket.destroy();
  }
  return sent;
}

test.serial('fuzz - 10,000 hostile NATS messages and 3,000 data-port frames: the worker stays up, serves a well-behaved caller, and is back at baseline', async (t) => {
  t.timeout(240_000);
  const random = new Random(SEED);
  t.log(`seed ${SEED} (TENSORBUS_FUZZ_SEED)`);
  // The caller sends everything through the bus (no direct routes), so that its traffic can be captured.
  const { agent, children, serverUrl, namespace } = await startProcessGroup(workerScript, 2, TIMING.relaxed, { direct: false }, ['--lease', String(LEASE_MS)]);
  const child = children[0]!;
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  const raw: RawNatsConnection = await connectRawNats({ servers: serverUrl });
  const hostile = await hostilePort(random);
  try {
    // Capture well-formed traffic of every protocol to mutate.
    const samples: Array<{ subject: string; data: Uint8Array }> = [];
    const capture = raw.subscribe(`${namespace}.>`, {
      callback: (_error, msg) => {
        if (samples.length < 2_000 && msg.data.byteLength < 64 * 1024) samples.push({ subject: msg.subject, data: Uint8Array.from(msg.data) });
      },
    });
    await raw.flush();
    const x = tf.tensor1d([1, 2, 3, 4]);
    (await agent.rpcSync('p1', add, [x, x])).dispose();
    await agent.rpcSync('p1', echo, [{ a: [1, 'two'], m: new Map([[1, 2]]) }]);
    const counter = agent.remote('p1', Counter, []);
    await counter.rpcSync().inc(2);
    const mine = agent.rref(tf.ones([2]));
    ((await agent.rpcSync('p1', rrefValue, [mine])) as tf.Tensor).dispose();
    await agent.distAutograd.context(async () => (await agent.rpcSync('p1', add, [x, x])).dispose());
    await new Promise<void>((resolve, reject) => agent.rpcStream('p1', countTo, [3, 'fuzz']).subscribe({ complete: resolve, error: reject }));
    await counter.release();
    await mine.release();
    // Deletes and context releases go in the background: captured once the worker has dropped what they free.
    for (let i = 0; i < 200; i++) {
      const held = await agent.rpcSync('p1', rrefCountsHere, []);
      if (held.owners === 0 && held.users === 0 && agent.rrefStats().owners === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    capture.unsubscribe();
    t.true(samples.length > 10, `captured ${samples.length} well-formed messages`);

    // The worker's data port and route token, from the route its control subject offers.
    const pong = await raw.request(`${namespace}.tb.ctl.p1`, defaultCodec.encode({ k: 'ping' }), { timeout: 2_000 }).catch(() => undefined);
    const route = /^\S+ (\S+):(\d+) ([0-9a-f]{32})$/.exec(pong?.headers?.get('tb-route') ?? '');
    t.truthy(route, 'the worker offers a direct route (its data port)');

    const remoteBaseline = await agent.rpcSync('p1', memoryHere, []);
    // The warm-up's RRef arguments on the worker go once collected (rrefStatsHere collects garbage).
    const noRRefs = { owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 };
    let remoteRRefBaseline = await agent.rpcSync('p1', rrefStatsHere, []);
    for (let i = 0; i < 50 && JSON.stringify(remoteRRefBaseline) !== JSON.stringify(noRRefs); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      remoteRRefBaseline = await agent.rpcSync('p1', rrefStatsHere, []);
    }
    t.deepEqual(remoteRRefBaseline, noRRefs, 'the worker holds no RRef before the fuzzing');
    const localTensors = tf.memory().numTensors;

    // A well-behaved caller, all along.
    let good = 0;
    let wrong = 0;
    const failures: string[] = [];
    let fuzzing = true;
    const wellBehaved = (async () => {
      const y = tf.tensor1d([5, 6]);
      while (fuzzing) {
        try {
          const sum = await agent.rpcSync('p1', add, [y, y], { timeoutMs: 15_000 });
          const values = [...(await sum.data())];
          sum.dispose();
          if (values[0] === 10 && values[1] === 12) good++;
          else wrong++;
        } catch (error) {
          failures.push(`${(error as Error).name}: ${(error as Error).message}`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      y.dispose();
    })();

    const deadline = Date.now() + BUDGET_MS;
    const targets = [`${namespace}.tb.members`, `${namespace}.tb.call.p1`, `${namespace}.tb.ctl.p1`, `${namespace}.tb.stream.p0.1`, `${namespace}.tb.call.p0`];
    let published = 0;
    for (; published < NATS_MESSAGES && Date.now() < deadline; published++) {
      const choice = random.int(10);
      const sample = random.pick(samples);
      const subject = choice < 5 ? sample.subject : random.pick(targets);
      let data: Uint8Array;
      if (choice < 5) data = mutate(random, sample.data, random.pick(samples).data);
      else if (choice < 7) data = hostileControl(random);
      else if (choice < 9) data = hostileCall(random);
      else data = sample.data; // replayed as it was
      const reply = random.next() < 0.3 ? `_INBOX.fuzz${random.int(1_000_000)}` : undefined;
      const headers = random.next() < 0.05 ? announcement(random, hostile.port) : undefined;
      raw.publish(subject, data, { reply, headers });
      if (published % 200 === 199) {
        await raw.flush();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
    await raw.flush();
    const frames = await fuzzDataPort(random, route![1]!, Number(route![2]), Buffer.from(route![3]!, 'hex'), `${namespace}.tb.call.p1`, DATA_PORT_FRAMES, deadline);
    t.log(`sent ${published} NATS messages and ${frames} data-port frames`);
    t.is(published, NATS_MESSAGES, 'every NATS message was sent within the time bound');
    t.is(frames, DATA_PORT_FRAMES, 'every data-port frame was sent within the time bound');

    // Let the worker work through what it got, then check it is whole.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    fuzzing = false;
    await wellBehaved;
    t.is(exited, undefined, 'the worker process is still running');
    t.deepEqual(agent.workers().map((w) => w.name), ['p0', 'p1'], 'the group is as it was');
    t.true(good > 0, `the well-behaved caller got ${good} right answers`);
    t.is(wrong, 0, 'no good call got a wrong answer');
    t.deepEqual(failures, [], 'no good call failed');
    const big = tf.ones([1_000_000]);
    const back = (await agent.rpcSync('p1', echo, [big])) as tf.Tensor;
    t.is(back.size, 1_000_000, 'a 4 MB call still works');
    back.dispose();
    big.dispose();

    // Back at baseline: tensors, tensor bytes, RRefs; the process did not keep what it was sent.
    let remote = await agent.rpcSync('p1', memoryHere, []);
    // Leased state of callers that are not members goes after LEASE_MS idle.
    for (let i = 0; i < 100 && (remote.tensors !== remoteBaseline.tensors || remote.tensorBytes !== remoteBaseline.tensorBytes); i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      remote = await agent.rpcSync('p1', memoryHere, []);
    }
    t.is(remote.tensors, remoteBaseline.tensors, 'tensors on the worker back at baseline');
    t.is(remote.tensorBytes, remoteBaseline.tensorBytes, 'tensor bytes on the worker back at baseline');
    // RRefs that arrived inside hostile calls go when collected (JavaScript has no destructors).
    let rrefs = await agent.rpcSync('p1', rrefStatsHere, []);
    for (let i = 0; i < 50 && JSON.stringify(rrefs) !== JSON.stringify(remoteRRefBaseline); i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      rrefs = await agent.rpcSync('p1', rrefStatsHere, []);
    }
    t.deepEqual(rrefs, remoteRRefBaseline, 'RRef bookkeeping on the worker back at baseline');
    t.true(remote.heapUsed < remoteBaseline.heapUsed + 64 * 2 ** 20, `JS heap ${mb(remoteBaseline.heapUsed)} -> ${mb(remote.heapUsed)}`);
    t.true(remote.rss < remoteBaseline.rss + 256 * 2 ** 20, `RSS ${mb(remoteBaseline.rss)} -> ${mb(remote.rss)}`);
    t.is(tf.memory().numTensors, localTensors, 'tensors on the caller back at baseline');
    x.dispose();
    await agent.rpcSync('p1', stop, []);
    await agent.shutdown({ timeoutMs: 10_000 });
    if (child.exitCode === null) await once(child, 'exit');
  } finally {
    hostile.close();
    await raw.close();
    if (child.exitCode === null) child.kill('SIGKILL');
    await agent.shutdown({ graceful: false }).catch(() => undefined);
  }
});

/** Headers of a large-payload announcement that point the receiver at the hostile port. */
function announcement(random: Random, port: number) {
  const h = natsHeaders();
  const host = random.pick(['127.0.0.1', '0.0.0.0', 'localhost', '::1', '255.255.255.255']);
  h.set('tb-xfer', String(random.int(1_000_000)));
  h.set('tb-chunk', String(random.pick([1, 1_000, 2 ** 20, 0, -5])));
  h.set('tb-size', String(random.pick([16, 2 ** 20, 2 ** 31 - 1, 2 ** 50, -1])));
  h.set('tb-pull', `_INBOX.fuzzpull${random.int(1_000)}`);
  h.set('tb-direct', `${random.next() < 0.5 ? 'anyhost' : 'h'} ${host}:${port} ${Buffer.from(random.bytes(16)).toString('hex')}`);
  return h;
}

function mb(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(0)} MB`;
}
