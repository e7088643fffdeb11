import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { RemoteError, RequestFailure, RpcTimeoutError, tf, WorkerUnavailableError } from '@tensorbus/core';
import type { DirectStats } from '@tensorbus/nats-transport';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { startProcessGroup, TIMING, type Timing, stopProcessGroups } from './process-group.js';
import { add, addNumbers, echo, fail, sleep, whoAmI } from './fixtures/functions.js';
import { bytesOf, eventually, patternTensor } from './helpers.js';
import { pid, rrefCountsHere, rrefStatsHere, stop, tensorsHere } from './fixtures/worker-functions.js';
import { confirmedAtStart, localValueOf, rrefValue } from './fixtures/rref-functions.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
const cli = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

const group = (size: number, timing: Timing = TIMING.relaxed) => startProcessGroup(workerScript, size, timing);

test.serial('nats processes - a static group of three OS processes calls across processes', async (t) => {
  const { agent, children } = await group(3);
  t.deepEqual(agent.workers().map((w) => w.name), ['p0', 'p1', 'p2']);
  t.is(await agent.rpcSync('p1', whoAmI, []), 'p1');
  t.is(await agent.rpcSync(2, whoAmI, []), 'p2');
  t.not(await agent.rpcSync('p1', pid, []), process.pid);
  const sum = await agent.rpcSync('p2', add, [tf.ones([3]), tf.ones([3])]);
  t.deepEqual([...(await sum.data())], [2, 2, 2]);
  const error = await t.throwsAsync(agent.rpcSync('p1', fail, ['across processes']), { instanceOf: RemoteError });
  t.is(error!.worker, 'p1');
  await Promise.all([agent.rpcSync('p1', stop, []), agent.rpcSync('p2', stop, [])]);
  await agent.shutdown({ timeoutMs: 10_000 });
  const codes = await Promise.all(children.map(async (c) => (c.exitCode ?? (await once(c, 'exit'))[0]) as number));
  t.deepEqual(codes, [0, 0]);
});

test.serial('nats processes - tensors return to baseline on both sides after 10,000 calls', async (t) => {
  const { agent, children } = await group(2);
  const x = tf.ones([8]);
  const remoteBaseline = await agent.rpcSync('p1', tensorsHere, []);
  const localBaseline = tf.memory().numTensors;
  let sent = 0;
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (sent++ < 10_000) (await agent.rpcSync('p1', add, [x, x])).dispose();
  }));
  t.is(tf.memory().numTensors, localBaseline);
  t.is(await agent.rpcSync('p1', tensorsHere, []), remoteBaseline);
  x.dispose();
  await agent.rpcSync('p1', stop, []);
  await agent.shutdown({ timeoutMs: 10_000 });
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
});

test.serial('nats processes - 100 MB tensors cross both ways streamed; a large reply the caller gave up on leaves nothing behind', async (t) => {
  const { agent, children } = await group(2);
  await agent.rpcSync('p1', whoAmI, []); // its reply offers the direct route
  const stats = () => (agent.transport as unknown as { directStats: DirectStats }).directStats;
  const remoteBaseline = await agent.rpcSync('p1', tensorsHere, []);
  const localBaseline = tf.memory().numTensors;
  const x = patternTensor(25_000_000, 21);
  const expected = bytesOf(x);
  const back = (await agent.rpcSync('p1', echo, [x])) as tf.Tensor;
  t.true(bytesOf(back).equals(expected));
  back.dispose();
  t.like(stats(), { streamedSent: 1, streamedReceived: 1 });
  // Given up on before its reply comes: the reply still arrives, and leaves nothing behind.
  await t.throwsAsync(agent.rpcSync('p1', sleep, [500, x], { timeoutMs: 100 }), { instanceOf: RpcTimeoutError });
  const answered = stats().calls;
  await eventually(() => stats().calls === answered + 1, 10_000);
  await eventually(() => tf.memory().numTensors === localBaseline + 1, 2_000); // x alone
  x.dispose();
  const remoteLeft = async () => (await agent.rpcSync('p1', tensorsHere, [])) === remoteBaseline;
  for (let i = 0; i < 50 && !(await remoteLeft()); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  t.is(await agent.rpcSync('p1', tensorsHere, []), remoteBaseline);
  await agent.rpcSync('p1', stop, []);
  await agent.shutdown({ timeoutMs: 10_000 });
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
});

test.serial('nats processes - a killed peer fails pending and new calls fast', async (t) => {
  const { agent, children } = await group(2, TIMING.fast);
  const pending = t.throwsAsync(agent.rpcSync('p1', sleep, [60_000], { timeoutMs: 0 }), { instanceOf: WorkerUnavailableError });
  await new Promise((resolve) => setTimeout(resolve, 100));
  const killed = Date.now();
  children[0]!.kill('SIGKILL');
  const error = await pending;
  const elapsed = Date.now() - killed;
  t.true(elapsed < 3_000, `pending call failed ${elapsed} ms after the kill`);
  t.regex(error!.message, /p1/);
  await t.throwsAsync(async () => agent.rpcSync('p1', whoAmI, []), { instanceOf: WorkerUnavailableError });
  await agent.shutdown({ timeoutMs: 2_000 });
});

test.serial('nats processes - a call to a killed callee says it went away during the call; a name nobody serves says it is not in the group', async (t) => {
  // Relaxed failure detection: the transport, not membership, tells the caller.
  const { agent, children } = await group(2);
  const nobody = await t.throwsAsync(agent.rpcSync('nobody', whoAmI, []), { instanceOf: WorkerUnavailableError });
  t.is(nobody!.reason, RequestFailure.NoResponders);
  t.regex(nobody!.message, /'nobody' is not in the group/);
  t.is(await agent.rpcSync('p1', whoAmI, []), 'p1');
  const pending = t.throwsAsync(agent.rpcSync('p1', sleep, [60_000], { timeoutMs: 0 }), { instanceOf: WorkerUnavailableError });
  await new Promise((resolve) => setTimeout(resolve, 100));
  children[0]!.kill('SIGKILL');
  const lost = await pending;
  t.is(lost!.reason, RequestFailure.ResponderLost);
  t.regex(lost!.message, /'p1' went away during the call of 'test\.sleep'/);
  // p1 is not yet declared failed (relaxed timing): a graceful shutdown would wait for it.
  await agent.shutdown({ graceful: false });
});

function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, TENSORBUS_QUIET: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (err += d));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code: code ?? 1, out, err })));
}

test.serial('launcher - starts N processes with names, ranks and an embedded server, prefixing their output', async (t) => {
  const env = { NATS_URL: '' };
  const { code, out } = await runCli(['launch', '-n', '3', workerScript, '--leave'], env);
  t.is(code, 0);
  for (let i = 0; i < 3; i++) {
    t.regex(out, new RegExp(`\\[worker${i}\\] ready worker${i} ${i}`));
    t.regex(out, new RegExp(`\\[worker${i}\\] left worker${i}`));
  }
});

test.serial('launcher - says which TensorFlow.js backend runs once per launch, in plain words, not once per worker', async (t) => {
  const server = await sharedNatsServer();
  const { code, err } = await runCli(['launch', '-n', '3', '--namespace', `said${process.pid}`, workerScript, '--leave'], { NATS_URL: server.url, TENSORBUS_QUIET: '' });
  t.is(code, 0, err);
  const said = err.split('\n').filter((line) => line.includes('TensorFlow.js runs on'));
  t.is(said.length, 1, err);
  t.regex(said[0]!, /^\[tensorbus\] TensorFlow\.js runs on (native TensorFlow|WebAssembly|plain JavaScript \(slow\)) \('(tensorflow|wasm|cpu)' backend\)/);
  t.notRegex(said[0]!, /Cannot find package|imported from/, 'no module-loader message');
  t.false(/TensorFlow\.js backend:/.test(err), 'the old line is not printed by any worker');
});

test.serial('launcher - a failing worker stops the rest and the launcher exits non-zero', async (t) => {
  const started = Date.now();
  const server = await sharedNatsServer();
  const { code, err } = await runCli(['launch', '-n', '2', '--namespace', `fail${process.pid}`, workerScript, '--exit-after', '1500', '7'], { NATS_URL: server.url });
  t.is(code, 7);
  t.regex(err, /exited with code 7/);
  t.true(Date.now() - started < 15_000);
});

test.serial('launcher - status lists the workers of a namespace', async (t) => {
  const { agent, children, serverUrl, namespace } = await group(3);
  const { code, out } = await runCli(['status', '--server', serverUrl, '--namespace', namespace]);
  t.is(code, 0);
  t.regex(out, /3 worker\(s\)/);
  for (const name of ['p0', 'p1', 'p2']) t.regex(out, new RegExp(`\\b${name}\\b`));
  await Promise.all([agent.rpcSync('p1', stop, []), agent.rpcSync('p2', stop, [])]);
  await agent.shutdown({ timeoutMs: 10_000 });
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
});

test.serial('nats processes - 10,000 RRef create/fork/pass/release cycles across 3 processes leave nothing behind', async (t) => {
  const { agent, children } = await group(3);
  const baseline = await Promise.all(['p1', 'p2'].map((w) => agent.rpcSync(w, tensorsHere, [])));
  const localBaseline = tf.memory().numTensors;
  let cycle = 0;
  await Promise.all(Array.from({ length: 16 }, async () => {
    while (cycle < 10_000) {
      const i = cycle++;
      const owner = i % 2 ? 'p1' : 'p2';
      const user = i % 2 ? 'p2' : 'p1';
      const r = agent.remote(owner, tf.ones, [[4]]);
      const value = (await agent.rpcSync(user, rrefValue, [r])) as tf.Tensor;
      value.dispose();
      await r.release();
    }
  }));
  const zero = { owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 };
  const deadline = Date.now() + 20_000;
  let stats: unknown[] = [];
  while (Date.now() < deadline) {
    globalThis.gc?.();
    stats = [agent.rrefStats(), ...(await Promise.all(['p1', 'p2'].map((w) => agent.rpcSync(w, rrefStatsHere, []))))];
    if (stats.every((s) => JSON.stringify(s) === JSON.stringify(zero))) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.deepEqual(stats, [zero, zero, zero]);
  t.deepEqual(await Promise.all(['p1', 'p2'].map((w) => agent.rpcSync(w, tensorsHere, []))), baseline);
  t.is(tf.memory().numTensors, localBaseline);
  await Promise.all([agent.rpcSync('p1', stop, []), agent.rpcSync('p2', stop, [])]);
  await agent.shutdown({ timeoutMs: 10_000 });
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
});

test.serial('nats processes - rref readiness - an owner process uses an RRef it was just asked to create; arguments are confirmed at start and released after, without gc', async (t) => {
  const { agent, children } = await group(3);
  for (let i = 0; i < 30; i++) {
    const r = agent.remote('p1', addNumbers, [i, 1]);
    t.is(await agent.rpcSync('p1', localValueOf, [r]), i + 1, `call ${i}: the owner waited for the value`);
    t.deepEqual(await agent.rpcSync('p2', confirmedAtStart, [[r]]), [true], `call ${i}: the fork was confirmed before the function ran`);
    await r.release();
  }
  const zero = { owners: 0, users: 0, pendingUsers: 0, pendingChildren: 0 };
  const deadline = Date.now() + 10_000;
  let stats: unknown[] = [];
  while (Date.now() < deadline) {
    stats = [agent.rrefStats(), ...(await Promise.all(['p1', 'p2'].map((w) => agent.rpcSync(w, rrefCountsHere, []))))];
    if (stats.every((s) => JSON.stringify(s) === JSON.stringify(zero))) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.deepEqual(stats, [zero, zero, zero]);
  await Promise.all([agent.rpcSync('p1', stop, []), agent.rpcSync('p2', stop, [])]);
  await agent.shutdown({ timeoutMs: 10_000 });
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
});
