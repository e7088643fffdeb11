import test, { type ExecutionContext } from 'ava';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { defaultCodec, SerializationError, STREAM_MIN_BYTES, tf, type DeferredBytes, type FrameDecoder } from '@tensorbus/core';
import { acquireFrame, bufferPoolStats, releaseOutgoing, wasmHeapOf } from '@tensorbus/core/internal';
import { natsTransport } from '@tensorbus/nats-transport';
import type { NatsTransport } from '@tensorbus/nats-transport/internal';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { replyHeader, REPLY_OK } from '../src/direct/direct-protocol.js';
import { FrameWriter } from '../src/direct/frame-writer.js';
import { WRITE_FROM_HEAP } from '../src/direct/heap-writes.js';
import { PeerConnection } from '../src/direct/peer-connection.js';
import { ConnectionLostError } from '../src/direct/peer-replies.js';

/** Deferred bytes of `length` whose byte i is (i * 31 + seed) & 0xff, counting its holds. */
function fakeDeferred(length: number, seed: number): DeferredBytes & { holds: number } {
  const fake = {
    byteLength: length,
    holds: 0,
    read(position: number, target: Uint8Array) {
      for (let i = 0; i < target.byteLength; i++) target[i] = ((position + i) * 31 + seed) & 0xff;
    },
    toBytes() {
      const bytes = new Uint8Array(length);
      fake.read(0, bytes);
      return bytes;
    },
    hold() {
      fake.holds++;
      return () => void fake.holds--;
    },
  };
  return fake;
}

/** A connected pair of sockets on loopback; `received` resolves with everything the far end gets until `bytes` have come. */
async function socketPair(): Promise<{ near: Socket; received: (bytes: number) => Promise<Buffer>; close(): void }> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const { Socket: SocketClass } = await import('node:net');
  const near = new SocketClass().connect((server.address() as AddressInfo).port, '127.0.0.1');
  const [far] = await accepted;
  const chunks: Buffer[] = [];
  let got = 0;
  let waiter: { bytes: number; resolve: (all: Buffer) => void } | undefined;
  far.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    got += chunk.length;
    if (waiter && got >= waiter.bytes) waiter.resolve(Buffer.concat(chunks));
  });
  return {
    near,
    received: (bytes) => new Promise((resolve) => (got >= bytes ? resolve(Buffer.concat(chunks)) : (waiter = { bytes, resolve }))),
    close: () => {
      near.destroy();
      far.destroy();
      server.close();
    },
  };
}

/** Two NATS transports on a fresh namespace whose direct calls go over TCP (no shared memory), closed when `t` ends. */
async function tcpPair(t: ExecutionContext): Promise<[NatsTransport, NatsTransport]> {
  const server = await sharedNatsServer();
  const namespace = `s${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const options = { servers: server.url, namespace, direct: { sharedMemory: false } };
  const a = (await natsTransport(options)) as NatsTransport;
  const b = (await natsTransport(options)) as NatsTransport;
  t.teardown(async () => {
    await a.close();
    await b.close();
  });
  return [a, b];
}

test('streaming - a deferred body is written whole, in order with the frames after it, and let go once written', async (t) => {
  const { near, received, close } = await socketPair();
  const writer = new FrameWriter(near);
  const body = fakeDeferred(9 * 2 ** 20 + 5, 3); // more than the chunk buffers at once
  const small = Buffer.from('after');
  let written = 0;
  writer.write(replyHeader(1, REPLY_OK, body.byteLength), body, () => written++);
  writer.write(replyHeader(2, REPLY_OK, small.length), small, () => written++);
  t.is(body.holds, 1, 'held while it streams');
  const total = 2 * 14 + body.byteLength + small.length;
  const all = await received(total);
  t.is(all.length, total);
  t.true(all.subarray(0, 14).equals(replyHeader(1, REPLY_OK, body.byteLength)));
  t.true(all.subarray(14, 14 + body.byteLength).equals(Buffer.from(body.toBytes())));
  t.true(all.subarray(14 + body.byteLength).equals(Buffer.concat([replyHeader(2, REPLY_OK, small.length), small])));
  t.is(written, 2);
  t.is(body.holds, 0);
  close();
});

test('streaming - a deferred body whose connection breaks is let go', async (t) => {
  const { near, close } = await socketPair();
  const writer = new FrameWriter(near);
  const body = fakeDeferred(256 * 2 ** 20, 4); // far more than the socket takes before the far end reads
  let written = false;
  writer.write(replyHeader(1, REPLY_OK, body.byteLength), body, () => (written = true));
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.is(body.holds, 1);
  close();
  for (let i = 0; i < 100 && body.holds > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.is(body.holds, 0);
  t.false(written);
});

test.serial('streaming - a deferred frame queued behind another streamed frame and released by its owner at once is still sent whole', async (t) => {
  const baseline = tf.memory().numTensors;
  const { near, received, close } = await socketPair();
  const writer = new FrameWriter(near);
  const first = fakeDeferred(9 * 2 ** 20 + 5, 7); // streams through several chunk buffers: the next one waits
  const x = tf.tidy(() => tf.range(0, 2 ** 19, 1, 'float32').reshape([512, 1024])); // 2 MiB: a deferred frame
  const frame = defaultCodec.encodeOutgoing({ x });
  x.dispose();
  t.false(frame instanceof Uint8Array, 'a frame of 2 MiB is deferred');
  const second = frame as DeferredBytes;
  const expected = Buffer.from(second.toBytes());
  let written = 0;
  t.true(writer.write(replyHeader(1, REPLY_OK, first.byteLength), first, () => written++));
  t.true(writer.write(replyHeader(2, REPLY_OK, second.byteLength), second, () => written++));
  // Its owner is done with it as soon as it is queued (as the call server does after respond).
  releaseOutgoing(second);
  const total = 2 * 14 + first.byteLength + second.byteLength;
  const all = await received(total);
  t.is(all.length, total);
  t.true(all.subarray(14, 14 + first.byteLength).equals(Buffer.from(first.toBytes())));
  t.true(all.subarray(28 + first.byteLength).equals(expected), 'the queued frame arrives whole and intact');
  for (let i = 0; i < 100 && written < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.is(written, 2);
  t.is(tf.memory().numTensors, baseline, 'its tensors go once it is written');
  // Released before it was queued: refused, nothing written.
  const y = tf.zeros([512, 1024]);
  const late = defaultCodec.encodeOutgoing({ y });
  y.dispose();
  releaseOutgoing(late);
  t.false(writer.write(replyHeader(3, REPLY_OK, late.byteLength), late));
  t.is(tf.memory().numTensors, baseline);
  close();
});

test.serial('streaming - a pooled frame queued behind a streamed one and released by its holder at once (twice) is still sent intact, and its memory goes back once written', async (t) => {
  const { near, received, close } = await socketPair();
  const writer = new FrameWriter(near);
  const first = fakeDeferred(9 * 2 ** 20 + 5, 11); // streams through several chunk buffers: the next one waits
  const before = bufferPoolStats().outstanding;
  const frame = acquireFrame(3 * 2 ** 20);
  for (let i = 0; i < 256; i++) frame.bytes[i] = (i * 13 + 5) & 0xff;
  for (let at = 256; at < frame.byteLength; at *= 2) frame.bytes.copyWithin(at, 0, Math.min(at, frame.byteLength - at));
  const expected = Buffer.from(frame.bytes);
  const memory = frame.bytes.buffer;
  let written = 0;
  t.true(writer.write(replyHeader(1, REPLY_OK, first.byteLength), first, () => written++));
  t.true(writer.write(replyHeader(2, REPLY_OK, frame.byteLength), frame, () => written++));
  // Its holder is done with it as soon as it is queued (as a responder is after respond).
  frame.release();
  frame.release();
  t.throws(() => frame.bytes, { instanceOf: SerializationError });
  t.is(bufferPoolStats().outstanding, before + 1, 'the queued write holds it');
  // Had its memory gone back, the next frame of its size would get it, and scribble over what is sent.
  const next = acquireFrame(3 * 2 ** 20);
  t.not(next.bytes.buffer, memory);
  next.bytes.fill(0xee);
  const total = 2 * 14 + first.byteLength + frame.byteLength;
  const all = await received(total);
  t.true(all.subarray(28 + first.byteLength).equals(expected), 'the queued frame arrives intact');
  for (let i = 0; i < 100 && written < 2; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.is(written, 2);
  next.release();
  t.is(bufferPoolStats().outstanding, before, 'given back once written, once');
  close();
});

test.serial('streaming - a tensor frame written straight from the WASM heap arrives intact when the heap grows while the socket still writes it', async (t) => {
  t.true(WRITE_FROM_HEAP, 'a 64-bit host without an address-space limit writes from the heap (run where it does)');
  const baseline = tf.memory().numTensors;
  const { near, received, close } = await socketPair();
  t.teardown(close);
  await once(near, 'connect');
  const writer = new FrameWriter(near);
  const x = tf.tidy(() => tf.range(0, 2 ** 23, 1, 'int32').mod(65521)); // 32 MiB
  const frame = defaultCodec.encodeOutgoing({ x }) as DeferredBytes;
  x.dispose();
  const expected = Buffer.from(frame.toBytes());
  let written = 0;
  t.true(writer.write(replyHeader(1, REPLY_OK, frame.byteLength), frame, () => written++));
  releaseOutgoing(frame); // its owner is done at once, as the call server is
  t.is(writer.fromHeap, 1, 'written from where its bytes lie, not through the chunk buffers');
  t.true(near.writableLength > 0, 'the kernel has not taken it all yet');
  // Grow the heap (a detached heap view would write nothing, a moved heap garbage), and write over the memory that is free.
  const heap = wasmHeapOf(tf.backend())!;
  const before = heap.heap().byteLength;
  const filler = tf.fill([before / 4 + 2 ** 20], 7, 'int32');
  t.true(heap.heap().byteLength > before, 'the heap grew while the frame was being written');
  const total = 14 + frame.byteLength;
  const all = await received(total);
  t.is(all.length, total);
  t.true(all.subarray(14).equals(expected), 'every byte as it was when written');
  for (let i = 0; i < 100 && written < 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.is(written, 1);
  filler.dispose();
  t.is(tf.memory().numTensors, baseline, 'its tensor goes once it is written');
});

test('streaming - a process whose address space is limited, or told TENSORBUS_WRITE_FROM_HEAP=0, copies deferred frames instead of writing from the WASM heap, and replies instead of reading into it', (t) => {
  const module = fileURLToPath(new URL('../src/direct/heap-writes.js', import.meta.url));
  const probe = (limit: string, env: Record<string, string> = {}) =>
    execFileSync('bash', ['-c', `ulimit -v ${limit} && exec "$0" --input-type=module -e "import(process.argv[1]).then((m) => console.log(m.WRITE_FROM_HEAP, m.READ_INTO_HEAP))" "$1"`, process.execPath, module], {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    }).trim();
  t.is(probe('unlimited'), 'true true');
  t.is(probe('16000000'), 'false false', 'V8 may move a memory it could not reserve whole');
  t.is(probe('unlimited', { TENSORBUS_WRITE_FROM_HEAP: '0' }), 'false false');
});

test.serial('streaming - a reply cut off while it arrives into tensor memory fails its request and leaves no tensors', async (t) => {
  const x = tf.ones([STREAM_MIN_BYTES / 4 + 1024]);
  const frame = defaultCodec.encode([x]);
  x.dispose();
  const baseline = tf.memory().numTensors;
  // A responder that answers with half of the frame, then goes away.
  const server = createServer((socket) => {
    socket.once('data', () => {
      socket.write(replyHeader(1, REPLY_OK, frame.byteLength));
      socket.write(frame.subarray(0, frame.byteLength >> 1), () => setTimeout(() => socket.destroy(), 50));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const connection = new PeerConnection({ endpoint: `127.0.0.1:${port}`, host: '127.0.0.1', port, onBroken: () => undefined });
  let sunk = 0;
  const reply = connection.request(() => Buffer.from([0x02]), undefined, (size) => {
    sunk++;
    return defaultCodec.decoder(size);
  });
  const error = await t.throwsAsync(reply, { instanceOf: ConnectionLostError });
  t.true(error!.delivered);
  t.is(sunk, 1, 'the reply went to the sink');
  t.is(tf.memory().numTensors, baseline);
  server.close();
});

test('streaming - where the WASM heap may move, a reply read into its sink is copied there as it arrives, whatever moved between reads', async (t) => {
  // A sink whose memory moves on the turn after each advance (as a heap that cannot grow in place), wiping the old place.
  const size = 2 * 1024 * 1024;
  let memory = new Uint8Array(size);
  let filled = 0;
  let moves = 0;
  const sink = {
    target: () => memory.subarray(filled),
    advance(n: number) {
      filled += n;
      setImmediate(() => {
        const moved = memory.slice();
        memory.fill(0);
        memory = moved;
        moves++;
      });
    },
    fail: () => undefined,
  };
  const body = Buffer.from(Uint8Array.from({ length: size }, (_, i) => (i * 131 + 7) & 0xff));
  const server = createServer((socket) => {
    socket.once('data', async () => {
      socket.write(replyHeader(1, REPLY_OK, size));
      // In pieces, a turn apart: the reader's memory moves between its reads.
      for (let at = 0; at < size; at += 64 * 1024) {
        socket.write(body.subarray(at, at + 64 * 1024));
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const connection = new PeerConnection({ endpoint: `127.0.0.1:${port}`, host: '127.0.0.1', port, onBroken: () => undefined, readIntoSink: false });
  const reply = await connection.request(() => Buffer.from([0x02]), undefined, () => sink);
  t.is(reply.data.byteLength, 0, 'the sink took the reply');
  t.true(moves > 8, `the memory moved ${moves} times while the reply arrived`);
  t.true(Buffer.from(memory).equals(body), 'every byte is where it belongs, in the memory as it is now');
  connection.close();
  server.close();
});

test.serial('streaming - over a TCP route a large request goes into the sink its subscription gives, as it arrives, leaving no tensors', async (t) => {
  const [a, b] = await tcpPair(t);
  const sinks: FrameDecoder[] = [];
  const seen: { sunk: boolean; bytes: number; sum: number }[] = [];
  b.subscribe('sum', (message) => {
    const sunk = message.sink !== undefined;
    t.is(message.sink, sunk ? sinks.at(-1) : undefined, 'the message comes with the sink that took it');
    const value = (sunk ? sinks.at(-1)!.result() : defaultCodec.decode(message.data)) as tf.Tensor[];
    const sum = value.length > 0 ? tf.tidy(() => value[0]!.sum().dataSync()[0]!) : 0;
    seen.push({ sunk, bytes: message.data.byteLength, sum });
    for (const tensor of value) tensor.dispose();
    message.respond(defaultCodec.encode(sum));
  }, { exclusive: true, requestSink: (size) => {
    const decoder = defaultCodec.decoder(size);
    if (decoder) sinks.push(decoder);
    return decoder;
  } });
  await b.flush();
  await a.request('sum', defaultCodec.encode([])); // the reply offers the route
  const baseline = tf.memory().numTensors;
  const x = tf.fill([2 ** 21], 3); // 8 MiB: pulled over the route
  const frame = defaultCodec.encodeOutgoing([x]);
  x.dispose();
  const reply = await a.request('sum', frame);
  releaseOutgoing(frame);
  t.is(defaultCodec.decode(reply), 3 * 2 ** 21);
  t.is(sinks.length, 1, 'one sink, for the large request only');
  t.like(seen.at(-1), { sunk: true, bytes: 0, sum: 3 * 2 ** 21 });
  t.like(b.directStats, { answered: 1, fetched: 1 }, 'the large one came over the route, pulled');
  t.is(tf.memory().numTensors, baseline);
});

test.serial('streaming - over a TCP route a request and its reply travel deferred and arrive intact while the WASM heap grows, leaving no tensors', async (t) => {
  const [a, b] = await tcpPair(t);
  // The responder echoes what it decodes, as a deferred frame.
  b.subscribe('echo', (message) => {
    const value = defaultCodec.decode(message.data) as tf.Tensor[];
    const answer = defaultCodec.encodeOutgoing(value);
    message.respond(answer);
    releaseOutgoing(answer);
    for (const tensor of value) tensor.dispose();
  }, { exclusive: true });
  await b.flush();
  await a.request('echo', defaultCodec.encode([])); // the reply offers the route
  const baseline = tf.memory().numTensors;
  const x = tf.tensor1d(Float32Array.from({ length: 2 ** 24 }, (_, i) => i % 1009));
  const expected = Buffer.from(x.dataSync().buffer);
  const frame = defaultCodec.encodeOutgoing([x]);
  t.false(frame instanceof Uint8Array, `64 MB is over the ${STREAM_MIN_BYTES}-byte threshold`);
  x.dispose();
  // While the bytes arrive into tensor memory, other code keeps growing the WASM heap.
  const grown: tf.Tensor[] = [];
  const grow = setInterval(() => grown.length < 10 && grown.push(tf.ones([2 ** 23])), 1);
  let decoder: FrameDecoder | undefined;
  const reply = await a.request('echo', frame, { replySink: (size) => (decoder = defaultCodec.decoder(size)) });
  clearInterval(grow);
  t.true(grown.length > 0);
  for (const tensor of grown) tensor.dispose();
  releaseOutgoing(frame);
  t.is(reply.byteLength, 0, 'the reply went into the sink');
  const [y] = decoder!.result() as tf.Tensor[];
  t.true(Buffer.from(y!.dataSync().buffer).equals(expected));
  y!.dispose();
  t.like(a.directStats, { streamedSent: 1, streamedReceived: 1, sharedRequests: 0 });
  t.like(b.directStats, { streamedSent: 1 });
  for (let i = 0; i < 50 && tf.memory().numTensors !== baseline; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.is(tf.memory().numTensors, baseline);
});
