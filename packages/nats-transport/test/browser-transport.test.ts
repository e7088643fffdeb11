/**
 * The browser build of the transport in a real page: headless Chromium
 * (playwright-core on the system's browser) loads a script bundled with
 * esbuild from the packages' "browser" exports; it reaches the bus over NATS
 * WebSocket and exchanges requests both ways with a Node transport on TCP,
 * large payloads in chunks within the server's max_payload.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { defaultCodec, RequestFailure, tf, WorkerUnavailableError, type Transport } from '@tensorbus/core';
import { natsTransport, startNatsServer, type NatsServer } from '../src/index.js';
import { openPage, servePage, type BrowserPage, type ServedPage } from '../src/testing/browser.js';

const pageScript = fileURLToPath(new URL('./fixtures/transport-page.js', import.meta.url));
const namespace = `tab${process.pid}`;

function patterned(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + 7) & 255;
  return bytes;
}

function isPatterned(bytes: Uint8Array, size: number): boolean {
  if (bytes.byteLength !== size) return false;
  for (let i = 0; i < size; i++) if (bytes[i] !== ((i * 31 + 7) & 255)) return false;
  return true;
}

let server: NatsServer;
let served: ServedPage;
let tab: BrowserPage;
let node: Transport;
let tabMaxPayload: number;

test.before(async () => {
  server = await startNatsServer({ websocket: { quiet: true } });
  served = await servePage(pageScript);
  tab = await openPage(served.url);
  await tab.page.waitForFunction('window.tbReady === true');
  tabMaxPayload = await tab.evaluate<number>(`tb.start(${JSON.stringify(server.wsUrl)}, ${JSON.stringify(namespace)})`);
  node = await natsTransport({ servers: server.url, namespace });
  node.subscribe('node.echo', (message) => message.respond(message.data.bytes.slice()));
  await node.flush();
});

test.after.always(async () => {
  await tab?.evaluate('tb.close()').catch(() => undefined);
  await tab?.close();
  await node?.close();
  await served?.close();
  await server?.stop();
});

test('browser transport - a page and a Node worker request each other over WebSocket and TCP, on one bus', async (t) => {
  t.is(tabMaxPayload, 1_048_576);
  t.deepEqual(await tab.evaluate('tb.roundTrip(1000)'), { intact: true, size: 1000 });
  const answer = await node.request('tab.echo', patterned(1000), { timeoutMs: 10_000 });
  t.true(isPatterned(answer.bytes, 1000));
});

test('browser transport - 100 MB crosses both ways, in chunks within max_payload (1 MB)', async (t) => {
  const size = 100 * 1024 * 1024;
  // The page sends 100 MB to Node and gets them back.
  t.deepEqual(await tab.evaluate(`tb.roundTrip(${size})`), { intact: true, size });
  // Node sends 100 MB to the page and gets them back. The limit is for a loaded two-core machine
  // (a page moves a few MB/s there, see docs/browser.md): this test is about integrity, not speed.
  const answer = await node.request('tab.echo', patterned(size), { timeoutMs: 180_000 });
  t.true(isPatterned(answer.bytes, size));
});

test('browser transport - @tensorbus/core runs in the page: TensorFlow.js on WASM (files beside the bundle) computes on tensors a Node worker sent, through the codec both ways, with no tensor left behind', async (t) => {
  const before = await tab.evaluate<{ backend: string; reason: string; numTensors: number }>('tb.tensors()');
  t.is(before.backend, 'wasm', before.reason);
  t.regex(before.reason, new RegExp(`WebAssembly files from ${served.url.replace(/[.]/g, '\\.')}`));
  const a = tf.randomNormal([64, 32]) as tf.Tensor2D;
  const b = tf.randomNormal([32, 16]) as tf.Tensor2D;
  const answer = await node.request('tab.matmul', defaultCodec.encode({ a, b }), { timeoutMs: 10_000 });
  const { product, backend } = defaultCodec.decode(answer) as { product: tf.Tensor2D; backend: string };
  const local = tf.matMul(a, b);
  t.is(backend, 'wasm');
  t.deepEqual(product.shape, [64, 16]);
  t.true(tf.max(tf.abs(tf.sub(product, local))).dataSync()[0]! < 1e-4);
  tf.dispose([a, b, product, local]);
  t.is((await tab.evaluate<{ numTensors: number }>('tb.tensors()')).numTensors, before.numTensors);
});

test('browser transport - Node-only options are refused by name in a page', async (t) => {
  for (const option of ['direct', 'beacon', 'tls', 'credsFile']) {
    t.is(await tab.evaluate(`tb.refused(${JSON.stringify(option)})`), `TypeError: natsTransport in a browser takes no '${option}' (see docs/browser.md)`);
  }
});

test('browser transport - a closed tab is gone from the bus: a request to what it served fails at once as no-responders, not by timeout', async (t) => {
  const other = await openPage(served.url);
  await other.page.waitForFunction('window.tbReady === true');
  await other.evaluate(`tb.start(${JSON.stringify(server.wsUrl)}, ${JSON.stringify(`${namespace}x`)})`);
  const peer = await natsTransport({ servers: server.url, namespace: `${namespace}x` });
  t.teardown(() => peer.close());
  t.true(isPatterned((await peer.request('tab.echo', patterned(10), { timeoutMs: 10_000 })).bytes, 10));
  await other.close();
  const started = Date.now();
  let error: unknown;
  // The server notices the WebSocket closed within moments; from then on nobody serves the subject.
  while (Date.now() - started < 10_000) {
    error = await peer.request('tab.echo', patterned(10), { timeoutMs: 10_000 }).then(() => undefined, (e: unknown) => e);
    if (error) break;
  }
  t.true(error instanceof WorkerUnavailableError, String(error));
  t.is((error as WorkerUnavailableError).reason, RequestFailure.NoResponders);
  t.true(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
});
