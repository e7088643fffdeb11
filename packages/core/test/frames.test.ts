import test from 'ava';
import type { Tensor } from '@tensorflow/tfjs';
import { defaultCodec, Frame, localTransport, SerializationError, tf, type InboundMessage } from '@tensorbus/core';
import { acquireFrame, bufferPoolStats, POOL_MIN_BYTES, useBufferSource, type BufferSource } from '@tensorbus/core/internal';

// The buffer pool is the process's: these tests count it, so they run one at a time.

const SIZE = 3 * 2 ** 20;

test.serial('frames - a frame released twice by each holder frees its memory once, after the last share; its bytes cannot be read once released', (t) => {
  const before = bufferPoolStats();
  const frame = acquireFrame(SIZE);
  const memory = frame.bytes.buffer;
  const queued = frame.retain(); // a second holder, e.g. a write still queued
  t.is(bufferPoolStats().outstanding, before.outstanding + 1);
  frame.release();
  frame.release();
  t.false(frame.held);
  t.true(queued.held);
  t.is(bufferPoolStats().outstanding, before.outstanding + 1, 'the other share still holds the memory');
  t.throws(() => frame.bytes, { instanceOf: SerializationError, message: /released/ }, 'a released share cannot read');
  t.throws(() => frame.retain(), { instanceOf: SerializationError }, 'nor make another share');
  queued.release();
  queued.release();
  t.is(bufferPoolStats().outstanding, before.outstanding, 'given back once');
  t.is(bufferPoolStats().freeBytes, before.freeBytes + memory.byteLength, 'and kept free once');
  // Exactly one buffer of that class is free: the next two frames of that size get it, then a fresh one.
  const next = acquireFrame(SIZE);
  const after = acquireFrame(SIZE);
  t.is(next.bytes.buffer, memory);
  t.not(after.bytes.buffer, memory);
  next.release();
  after.release();
  t.is(bufferPoolStats().outstanding, before.outstanding);
});

test.serial('frames - small frames are plain bytes: nothing is pooled, and their release frees nothing', (t) => {
  const before = bufferPoolStats();
  const frame = acquireFrame(POOL_MIN_BYTES - 1);
  t.is(bufferPoolStats().outstanding, before.outstanding);
  frame.release();
  frame.release();
  t.deepEqual(bufferPoolStats(), before);
  const wrapped = Frame.of(new Uint8Array([1, 2, 3]));
  t.deepEqual([...wrapped.bytes], [1, 2, 3]);
  wrapped.release();
  t.false(wrapped.held);
});

test.serial('frames - decode takes the frame it is given: on a backend that copies, the memory goes back once decoded and the tensor keeps its values when it is reused', (t) => {
  t.is(tf.getBackend(), 'wasm');
  const tensors = tf.memory().numTensors;
  const x = tf.range(0, SIZE / 4, 1, 'float32');
  const expected = x.dataSync().slice();
  const before = bufferPoolStats();
  const frame = defaultCodec.encodeFrame({ x });
  x.dispose();
  t.is(bufferPoolStats().outstanding, before.outstanding + 1);
  const memory = frame.bytes.buffer;
  const { x: decoded } = defaultCodec.decode(frame) as { x: Tensor };
  t.false(frame.held, 'decode took the share');
  t.is(bufferPoolStats().outstanding, before.outstanding, 'and gave the memory back');
  // The next frame of that size reuses the memory; the decoded tensor does not see it.
  const scribble = acquireFrame(frame.byteLength);
  t.is(scribble.bytes.buffer, memory);
  scribble.bytes.fill(0xee);
  t.deepEqual(decoded.dataSync(), expected);
  scribble.release();
  decoded.dispose();
  t.is(tf.memory().numTensors, tensors);
});

test.serial('frames - decode of a malformed frame still lets go of it', (t) => {
  const before = bufferPoolStats();
  const frame = acquireFrame(SIZE);
  frame.bytes.fill(0xff);
  t.throws(() => defaultCodec.decode(frame), { instanceOf: SerializationError });
  t.false(frame.held);
  t.is(bufferPoolStats().outstanding, before.outstanding);
});

test.serial('frames - on a backend whose tensors view the frame (cpu), decode pins it: its memory is never reused while the tensor lives', async (t) => {
  const previous = tf.getBackend();
  t.true(await tf.setBackend('cpu'));
  try {
    const x = tf.range(0, SIZE / 4, 1, 'float32');
    const expected = x.dataSync().slice();
    const frame = defaultCodec.encodeFrame({ x });
    x.dispose();
    const memory = frame.bytes.buffer;
    const before = bufferPoolStats();
    const { x: decoded } = defaultCodec.decode(frame) as { x: Tensor };
    t.false(frame.held, 'decode took the share');
    t.is(bufferPoolStats().outstanding, before.outstanding - 1, 'the pool no longer counts it as lent');
    t.is(bufferPoolStats().freeBytes, before.freeBytes, 'and did not take it back');
    const next = acquireFrame(frame.byteLength);
    t.not(next.bytes.buffer, memory, 'memory a tensor views is not handed out again');
    next.bytes.fill(0xee);
    t.deepEqual(decoded.dataSync(), expected);
    next.release();
    decoded.dispose();
  } finally {
    await tf.setBackend(previous);
  }
});

test.serial('frames - in process, a pooled frame published to two subscribers goes back once both let go; a request and its reply leave the pool as it was', async (t) => {
  const a = localTransport({ bus: 'frames-test' });
  const b = localTransport({ bus: 'frames-test' });
  const before = bufferPoolStats().outstanding;
  const frame = acquireFrame(SIZE);
  frame.bytes.fill(7);
  const got: Frame[] = [];
  const both = new Promise<void>((resolve) => {
    const take = (m: InboundMessage) => {
      got.push(m.data);
      if (got.length === 2) resolve();
    };
    a.subscribe('fan', take);
    b.subscribe('fan', take);
  });
  a.publish('fan', frame);
  frame.release(); // the sender is done at once
  await both;
  t.true(got.every((data) => data.bytes[SIZE - 1] === 7), 'each subscriber reads the bytes sent');
  got[0]!.release();
  t.is(bufferPoolStats().outstanding, before + 1, 'the other subscriber still holds it');
  got[1]!.release();
  got[1]!.release();
  t.is(bufferPoolStats().outstanding, before);

  b.subscribe('echo', (m) => {
    const value = defaultCodec.decode(m.data);
    const answer = defaultCodec.encodeFrame(value);
    m.respond(answer);
    answer.release();
  });
  const request = defaultCodec.encodeFrame({ payload: new Uint8Array(SIZE).fill(3) });
  const reply = a.request('echo', request, { timeoutMs: 10_000 });
  request.release();
  const { payload } = defaultCodec.decode(await reply) as { payload: Uint8Array };
  t.is(payload.byteLength, SIZE);
  t.is(payload[SIZE - 1], 3);
  t.is(bufferPoolStats().outstanding, before, 'every frame went back');
  await a.close();
  await b.close();
});

test.serial('frames - once a buffer source is in use, every large frame lies in its memory: heap buffers pooled before, or lent then, are not reused', (t) => {
  // Heap memory pooled before the source (as a process that encoded large frames before its NATS transport started).
  const early = acquireFrame(SIZE);
  const lent = acquireFrame(SIZE);
  early.release();
  const made = new Set<ArrayBuffer>();
  const source: BufferSource = {
    allocate: (bytes) => {
      const memory = new ArrayBuffer(bytes);
      made.add(memory);
      return memory;
    },
  };
  const previous = useBufferSource(source);
  t.teardown(() => useBufferSource(previous));
  lent.release();
  for (let i = 0; i < 3; i++) {
    const frame = acquireFrame(SIZE);
    t.true(made.has(frame.bytes.buffer as ArrayBuffer), `frame ${i} lies in the source's memory`);
    frame.release();
  }
});
