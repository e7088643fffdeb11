import test from 'ava';
import { createServer, Socket, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import type { DeferredBytes } from '@tensorbus/core';
import { partHeader, PART_HEADER_BYTES, replyHeader, REPLY_OK } from '../src/direct/direct-protocol.js';
import { FrameWriter } from '../src/direct/frame-writer.js';
import { partsOf, writeStriped } from '../src/direct/lane-groups.js';
import { POOL_WRITE } from '../src/direct/heap-writes.js';
import { loadAddon } from '../src/shm/shm-native.js';

/** Deferred bytes of `length` whose byte i is (i * 31 + seed) & 0xff, readable in place (views), counting their holds. */
function inPlace(length: number, seed: number): DeferredBytes & { holds: number } {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + seed) & 0xff;
  const body = {
    byteLength: length,
    holds: 0,
    read: (position: number, target: Uint8Array) => target.set(bytes.subarray(position, position + target.byteLength)),
    toBytes: () => bytes.slice(),
    views: () => [bytes.subarray(0, length >> 1), bytes.subarray(length >> 1)],
    hold() {
      body.holds++;
      return () => void body.holds--;
    },
  };
  return body;
}

/** A connected pair of sockets on loopback whose far end reads only once `received` is called (so the near end's send buffer fills). */
async function socketPair(): Promise<{ near: Socket; received: (bytes: number) => Promise<Buffer>; close(): void }> {
  const server = createServer({ pauseOnConnect: true });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const near = new Socket().connect((server.address() as AddressInfo).port, '127.0.0.1');
  await once(near, 'connect');
  const [far] = await accepted;
  return {
    near,
    received: (bytes) =>
      new Promise((resolve) => {
        const chunks: Buffer[] = [];
        let got = 0;
        far.on('data', (chunk: Buffer) => {
          chunks.push(chunk);
          got += chunk.length;
          if (got >= bytes) resolve(Buffer.concat(chunks));
        });
        far.resume();
      }),
    close: () => {
      near.destroy();
      far.destroy();
      server.close();
    },
  };
}

const waitFor = async (done: () => boolean) => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
};

test('pool writes - this build writes from libuv\'s pool (the addon is built and the WASM heap stays put)', (t) => {
  t.truthy(loadAddon().binding, loadAddon().reason);
  t.is(typeof POOL_WRITE, 'function');
});

test('pool writes - a pooled body larger than the socket takes at once arrives whole, in order with what was queued behind it, and is let go once written', async (t) => {
  const { near, received, close } = await socketPair();
  const writer = new FrameWriter(near);
  const body = inPlace(24 * 2 ** 20 + 7, 5); // beyond the send buffer: the pool writes what fits, the socket the rest
  const small = Buffer.from('after');
  const order: number[] = [];
  writer.write(partHeader(1, body.byteLength, 0, body.byteLength), body, () => order.push(1), true);
  writer.write(replyHeader(2, REPLY_OK, small.length), small, () => order.push(2));
  t.is(body.holds, 1, 'held while the pool writes it');
  const total = PART_HEADER_BYTES + body.byteLength + 14 + small.length;
  const all = await received(total);
  t.is(all.length, total);
  t.true(all.subarray(0, PART_HEADER_BYTES).equals(partHeader(1, body.byteLength, 0, body.byteLength)));
  t.true(all.subarray(PART_HEADER_BYTES, PART_HEADER_BYTES + body.byteLength).equals(Buffer.from(body.toBytes())));
  t.true(all.subarray(PART_HEADER_BYTES + body.byteLength).equals(Buffer.concat([replyHeader(2, REPLY_OK, small.length), small])));
  await waitFor(() => order.length === 2);
  t.deepEqual(order, [1, 2]);
  t.is(body.holds, 0);
  t.is(writer.fromPool, 1);
  close();
});

test('pool writes - a body written unpooled (a whole reply) is written by the event loop\'s thread', async (t) => {
  const { near, received, close } = await socketPair();
  const writer = new FrameWriter(near);
  const body = inPlace(2 ** 20, 6);
  writer.write(replyHeader(1, REPLY_OK, body.byteLength), body);
  const all = await received(14 + body.byteLength);
  t.true(all.subarray(14).equals(Buffer.from(body.toBytes())));
  t.is(writer.fromHeap, 1);
  t.is(writer.fromPool, 0);
  close();
});

test('pool writes - each part of a striped reply is written from the pool, and the parts tile the reply', async (t) => {
  const pairs = await Promise.all([socketPair(), socketPair(), socketPair()]);
  const writers = pairs.map(({ near }) => new FrameWriter(near));
  const body = inPlace(3 * 2 ** 20 + 11, 7);
  let written = false;
  t.true(writeStriped(writers, 9, body, () => (written = true)));
  const parts = partsOf(body.byteLength, writers.length);
  const arrived = await Promise.all(pairs.map(({ received }, i) => received(PART_HEADER_BYTES + parts[i]!.length)));
  const whole = Buffer.concat(arrived.map((bytes) => bytes.subarray(PART_HEADER_BYTES)));
  t.true(whole.equals(Buffer.from(body.toBytes())));
  await waitFor(() => written);
  t.true(written);
  t.deepEqual(writers.map((writer) => writer.fromPool), [1, 1, 1]);
  t.is(body.holds, 0);
  for (const { close } of pairs) close();
});

test('pool writes - a pooled body whose connection closes while it is written is let go, and its frame is never said to be written', async (t) => {
  const { near, close } = await socketPair();
  const writer = new FrameWriter(near);
  const body = inPlace(64 * 2 ** 20, 8); // far more than the socket takes while the far end does not read
  let written = false;
  writer.write(partHeader(1, body.byteLength, 0, body.byteLength), body, () => (written = true), true);
  near.destroy();
  await waitFor(() => body.holds === 0);
  t.is(body.holds, 0);
  t.false(written);
  close();
});

test('pool writes - the addon refuses anything but a descriptor, 1 to 64 byte views and a callback', (t) => {
  const writev = loadAddon().binding!.writev!;
  const views = [new Uint8Array(1)];
  for (const args of [[-1, views, () => undefined], [1, [], () => undefined], [1, [new Float32Array(1)], () => undefined], [1, views, 'no'], [1, Array.from({ length: 65 }, () => new Uint8Array(1)), () => undefined]]) {
    t.throws(() => (writev as (...a: unknown[]) => void)(...args), { instanceOf: TypeError });
  }
});
