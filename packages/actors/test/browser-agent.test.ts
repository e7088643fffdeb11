/**
 * A tensorbus worker in a browser tab: headless Chromium (playwright-core on
 * the system's browser) loads a page bundled with esbuild from the packages'
 * "browser" exports; it runs initRpc over NATS WebSocket and works with a
 * Node worker on TCP, on one real nats-server: calls both ways with verified
 * MACs, an RRef, distributed autograd through a RemoteModule, membership,
 * calls back into a tab from the call it serves refused at once, and a
 * closed tab that is a departed worker.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { ReentrantCallError, tf, WorkerUnavailableError } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { startNatsServer, type NatsServer } from '@tensorbus/nats-transport/testing';
import { firstValueFrom, filter } from 'rxjs';
import { initRpc, type RpcAgent } from '../src/index.js';
import { openPage, servePage, type BrowserPage, type ServedPage } from './browser.js';
import { callerAfterWait, callerSeen, hello, throughNodes, whereAmI } from './fixtures/browser-functions.js';

const pageScript = fileURLToPath(new URL('./fixtures/agent-page.js', import.meta.url));
const namespace = `tabagent${process.pid}`;

let server: NatsServer;
let served: ServedPage;
let tab: BrowserPage;
let node: RpcAgent;
let node2: RpcAgent;
let seenAtStart: string[];

test.before(async () => {
  server = await startNatsServer({ websocket: { quiet: true } });
  served = await servePage(pageScript, 'tensorbus agent page');
  node = await initRpc({ name: 'node', transport: natsTransport({ servers: server.url, namespace }), heartbeatMs: 100, failureTimeoutMs: 1_000 });
  node2 = await initRpc({ name: 'node2', transport: natsTransport({ servers: server.url, namespace }), heartbeatMs: 100, failureTimeoutMs: 1_000 });
  tab = await openPage(served.url);
  await tab.page.waitForFunction('window.tbReady === true');
  seenAtStart = await tab.evaluate<string[]>(`tb.start(${JSON.stringify(server.wsUrl)}, ${JSON.stringify(namespace)}, 'tab')`);
});

test.after.always(async () => {
  await tab?.close();
  await node?.shutdown({ graceful: false }).catch(() => undefined);
  await node2?.shutdown({ graceful: false }).catch(() => undefined);
  await served?.close();
  await server?.stop();
});

test.serial('browser agent - the tab joins over WebSocket: it sees the Node worker, and appears in the Node worker\'s membership$', async (t) => {
  t.deepEqual(seenAtStart, ['node', 'node2', 'tab']);
  const members = await firstValueFrom(node.membership$.pipe(filter((list) => list.some((w) => w.name === 'tab'))));
  t.deepEqual(members.map((w) => w.name).sort(), ['node', 'node2', 'tab']);
});

test.serial('browser agent - the tab calls a Node worker\'s function with rpcSync, and the Node worker shows the tab\'s MAC (keys made with noble, checked with node:crypto)', async (t) => {
  const before = await tab.evaluate<number>('tb.numTensors()');
  t.deepEqual(await tab.evaluate('tb.callSquare("node", [1, -2, 3])'), [1, 4, 9]);
  t.deepEqual(await tab.evaluate('tb.callerSeen("node")'), { caller: 'tab', verified: true });
  t.is(await tab.evaluate<number>('tb.numTensors()'), before, 'no tensor left behind in the page');
});

test.serial('browser agent - a Node worker calls a remoteFunction registered in the page, and the tab shows the Node worker\'s MAC', async (t) => {
  const before = await tab.evaluate<number>('tb.numTensors()');
  const x = tf.tensor1d([1, 2, 3]);
  const answer = await node.rpcSync('tab', whereAmI, [x]);
  t.true(answer.inPage, 'it ran in the page');
  t.is(answer.backend, 'wasm');
  t.deepEqual(Array.from(await answer.doubled.data()), [2, 4, 6]);
  tf.dispose([x, answer.doubled]);
  t.deepEqual(await node.rpcSync('tab', callerSeen, []), { caller: 'node', verified: true });
  t.is(await tab.evaluate<number>('tb.numTensors()'), before, 'the page disposed what the call made');
});

test.serial('browser agent - the tab serves two callers\' calls one at a time, so each call\'s scope (its caller, its tensors) holds across its awaits', async (t) => {
  const before = await tab.evaluate<number>('tb.numTensors()');
  const started = Date.now();
  // Each call waits 400 ms inside the tab; the second arrives 100 ms after the first, so run at once
  // they would overlap without nesting (the first ending while the second is open).
  const first = node.rpcSync('tab', callerAfterWait, [400]);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const second = node2.rpcSync('tab', callerAfterWait, [400]);
  const secondDone = second.then(() => Date.now() - started);
  t.deepEqual(await Promise.all([first, second]), ['node', 'node2'], 'each call sees its own caller after its await');
  t.true((await secondDone) >= 800, `the second call ran after the first (${await secondDone} ms)`);
  t.is(await tab.evaluate<number>('tb.numTensors()'), before, 'each call\'s tensors were freed when it ended');
});

test.serial('browser agent - the tab holds an RRef on the Node worker: remote, a proxy call, toHere, release', async (t) => {
  const owned = node.rrefStats().owners;
  t.deepEqual(await tab.evaluate('tb.counter("node", 5, 3)'), { owner: 'node', added: 8, here: 8 });
  // Released by the tab: the owner lets it go.
  const deadline = Date.now() + 5_000;
  while (node.rrefStats().owners !== owned && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  t.is(node.rrefStats().owners, owned);
});

test.serial('browser agent - distributed autograd: a RemoteModule on the Node worker driven from the tab, backward across both, gradients equal to a local computation\'s', async (t) => {
  const x = [[1, -2, 3], [0.5, 0.5, -1], [2, 1, 0]];
  const target = [[0.5, 1], [1, -1], [0, 2]];
  const tensorsBefore = tf.memory().numTensors;
  const pageBefore = await tab.evaluate<number>('tb.numTensors()');
  const run = await tab.evaluate<{ loss: number; params: number[][]; grads: number[][] }>(`tb.moduleGradients("node", 7, ${JSON.stringify(x)}, ${JSON.stringify(target)})`);
  // The same computation here, from the parameters the module had.
  const w = tf.tensor2d(run.params[0]!, [3, 2]);
  const b = tf.tensor1d(run.params[1]!);
  const xs = tf.tensor2d(x);
  const ys = tf.tensor2d(target);
  const lossOf = (wi: tf.Tensor, bi: tf.Tensor) => tf.losses.meanSquaredError(ys, tf.relu(tf.add(tf.matMul(xs, wi), bi))) as tf.Scalar;
  const [gw, gb] = tf.grads(lossOf)([w, b]);
  const loss = tf.tidy(() => lossOf(w, b));
  t.true(Math.abs(run.loss - (await loss.data())[0]!) < 1e-5, `loss ${run.loss}`);
  t.is(run.grads.length, 2);
  const close = (got: number[], want: Float32Array | Int32Array | Uint8Array) => got.length === want.length && got.every((v, i) => Math.abs(v - want[i]!) < 1e-5);
  t.true(close(run.grads[0]!, await gw!.data()), `dL/dw ${run.grads[0]} vs ${await gw!.data()}`);
  t.true(close(run.grads[1]!, await gb!.data()), `dL/db ${run.grads[1]} vs ${await gb!.data()}`);
  t.true(run.grads[0]!.some((v) => v !== 0), 'a gradient that is not all zeros');
  tf.dispose([w, b, xs, ys, gw!, gb!, loss]);
  t.is(await tab.evaluate<number>('tb.numTensors()'), pageBefore, 'no tensor left behind in the page');
  const deadline = Date.now() + 5_000;
  while (tf.memory().numTensors !== tensorsBefore && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  t.is(tf.memory().numTensors, tensorsBefore, 'the module\'s weights and the context\'s tensors are gone from the Node worker');
});

test.serial('browser agent - a call back into the tab from the call it serves (tab → Node → tab, and through two Node workers) fails at once with ReentrantCallError, and the tab serves on', async (t) => {
  const before = await tab.evaluate<number>('tb.numTensors()');
  for (const via of [['node2'], ['node2', 'node']]) {
    const started = Date.now();
    // Queued behind the call it came back from, it would wait out every timeout on the way (30 s here).
    const error = await t.throwsAsync(node.rpcSync('tab', throughNodes, [via, 'tab'], { timeoutMs: 30_000 }), { instanceOf: ReentrantCallError });
    t.is(error?.code, 'REENTRANT_CALL');
    t.regex(error?.message ?? '', /worker 'tab' serves one call at a time/);
    const elapsed = Date.now() - started;
    t.true(elapsed < 3_000, `through ${via.join(', ')}: refused after ${elapsed} ms`);
  }
  t.is(await node.rpcSync('tab', hello, [], { timeoutMs: 5_000 }), 'hello', 'the tab serves the next call');
  t.is(await tab.evaluate<number>('tb.numTensors()'), before);
});

test.serial('browser agent - a call back into the tab from a call the tab made on its own (serving none) is served', async (t) => {
  t.is(await tab.evaluate<string>('tb.relay(["node2"], "tab")'), 'hello');
  t.is(await tab.evaluate<string>('tb.relay(["node2", "node"], "tab")'), 'hello');
});

test.serial('browser agent - a closed tab is a departed worker: it leaves membership$ and calls to it fail fast with WorkerUnavailableError', async (t) => {
  const gone = firstValueFrom(node.membership$.pipe(filter((list) => !list.some((w) => w.name === 'tab'))));
  await tab.close();
  await gone;
  const started = Date.now();
  const x = tf.tensor1d([1]);
  await t.throwsAsync(node.rpcSync('tab', whereAmI, [x]), { instanceOf: WorkerUnavailableError });
  x.dispose();
  t.true(Date.now() - started < 1_000, `failed after ${Date.now() - started} ms`);
});
