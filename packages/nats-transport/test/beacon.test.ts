/**
 * The process's beacon thread (beacon/): a slot's messages go out from a
 * thread of its own while the main thread computes, made by the slot's
 * builder from memory shared with the caller; a slot that cannot run says so
 * and costs nothing; nothing outlives the transport.
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import type { BeaconSlot } from '@tensorbus/core';
import { beaconStats, NatsTransport } from '@tensorbus/nats-transport/internal';
import { natsTransport } from '@tensorbus/nats-transport';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';

const builder = new URL('./fixtures/count-beat.js', import.meta.url).href;
let namespaces = 0;
const fresh = () => `bcn${process.pid}x${++namespaces}`;
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function sharedMemory(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(8));
}

test.serial('beacon - a slot publishes what its builder makes every interval, also while the main thread computes', async (t) => {
  const server = await sharedNatsServer();
  const namespace = fresh();
  const transport = (await natsTransport({ servers: server.url, namespace })) as NatsTransport;
  const listener = await natsTransport({ servers: server.url, namespace });
  t.teardown(async () => {
    await transport.close();
    await listener.close();
  });
  const heard: string[] = [];
  listener.subscribe('beats', (m) => heard.push(new TextDecoder().decode(m.data.bytes)));
  await listener.flush();
  const shared = sharedMemory();
  const slot = transport.startBeacon({ subject: 'beats', intervalMs: 50, builder, data: { tag: 'x' }, shared })!;
  t.true(await slot.ready);
  // Blocks this thread for a second: the beacon thread goes on numbering (and sending) beats.
  const before = Atomics.load(shared, 0);
  const until = Date.now() + 1_000;
  while (Date.now() < until);
  const during = Atomics.load(shared, 0) - before;
  t.true(during >= 5, `${during} beats while this thread computed`);
  await settle(300);
  t.true(heard.includes(`x:${before + 1}`) && heard.includes(`x:${before + during}`), 'they were published');
  Atomics.store(shared, 1, 1);
  await settle(200);
  const count = heard.length;
  await settle(300);
  t.is(heard.length, count, 'the builder stopped them');
  slot.remove();
});

test.serial('beacon - a slot whose builder cannot be loaded is not ready; the thread ends with the last slot and with the transport', async (t) => {
  const server = await sharedNatsServer();
  const transport = await natsTransport({ servers: server.url, namespace: fresh() });
  t.teardown(() => transport.close());
  const broken = transport.startBeacon!({ subject: 'beats', intervalMs: 50, builder: new URL('./fixtures/no-such-builder.js', import.meta.url).href, data: {}, shared: sharedMemory() })!;
  t.false(await broken.ready);
  const working = transport.startBeacon!({ subject: 'beats', intervalMs: 50, builder, data: { tag: 'y' }, shared: sharedMemory() })!;
  t.true(await working.ready);
  t.like(beaconStats(), { running: true, slots: 2 });
  broken.remove();
  t.like(beaconStats(), { running: true, slots: 1 });
  await transport.close();
  t.like(beaconStats(), { running: false, slots: 0 }, "closing the transport removed its slots");
  t.is(transport.startBeacon!({ subject: 'beats', intervalMs: 50, builder, data: {}, shared: sharedMemory() }), undefined, 'a closed transport starts none');
});

test.serial('beacon - a transport with the beacon turned off starts none', async (t) => {
  const server = await sharedNatsServer();
  const transport = await natsTransport({ servers: server.url, namespace: fresh(), beacon: false });
  t.teardown(() => transport.close());
  const slot: BeaconSlot | undefined = transport.startBeacon!({ subject: 'beats', intervalMs: 50, builder, data: {}, shared: sharedMemory() });
  t.is(slot, undefined);
  t.false(beaconStats().running);
});

test.serial('beacon - the thread never keeps its process alive, even with a slot nobody removed', async (t) => {
  const server = await sharedNatsServer();
  const script = fileURLToPath(new URL('./fixtures/beacon-left-open.js', import.meta.url));
  const child = spawn(process.execPath, ['--expose-gc', script, server.url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  clearTimeout(timer);
  t.is(out.trim(), 'true', 'the slot beat');
  t.is(signal, null, 'the process ended by itself');
  t.is(code, 0);
});
