import test from 'ava';
import type { Tensor } from '@tensorflow/tfjs';
import { defaultCodec, tf, type Frame, type FrameDecoder } from '@tensorbus/core';
import { bufferPoolStats } from '@tensorbus/core/internal';
import { ReplyLanes, type LaneOwner } from '../src/direct/reply-lanes.js';
import { StripedReply, type IncomingPart } from '../src/direct/striped-reply.js';
import { partsOf } from '../src/direct/lane-groups.js';

// A reply striped over lanes is put together where it belongs: in the tensors a frame decoder
// reserved, whatever order its parts come in. Serial: tf.memory() counts must see no other test's tensors.

/** A float32 tensor of `n` values that differ from place to place. */
function pattern(n: number, seed: number): Tensor {
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) values[i] = ((i * 7919 + seed) % 100_003) / 7;
  return tf.tensor1d(values);
}

/** A value of two large tensors and a small one, and its frame's bytes. */
function largeValue(): { value: { x: Tensor; y: Tensor; ids: Tensor; step: number }; bytes: Uint8Array } {
  const value = { x: pattern(300_000, 1), y: pattern(150_001, 2), ids: tf.tensor1d([4, 5, 6], 'int32'), step: 9 };
  return { value, bytes: Uint8Array.from(defaultCodec.encode(value)) };
}

/**
 * Reads the parts of `bytes` (as a data port splits them over `lanes`) as lanes read at once:
 * the first part of `order` begins alone and brings a piece; then the second begins (and, if
 * `secondWhole`, is read whole); then the others begin, and all are read a piece of `piece`
 * bytes at a time from each part in turn.
 */
function readStriped(reply: StripedReply, bytes: Uint8Array, lanes: number, order: number[], piece: number, secondWhole = false): void {
  const parts = partsOf(bytes.byteLength, lanes);
  const reading: { part: IncomingPart; offset: number; done: number }[] = [];
  const begin = (i: number) => {
    const { offset, length } = parts[i]!;
    const r = { part: reply.part(offset, length), offset, done: 0 };
    reading.push(r);
    return r;
  };
  const read = (r: (typeof reading)[number], most: number) => {
    const target = r.part.target();
    const k = Math.min(target.byteLength, most, r.part.left);
    target.set(bytes.subarray(r.offset + r.done, r.offset + r.done + k));
    r.done += k;
    r.part.advance(k);
  };
  read(begin(order[0]!), piece);
  const second = begin(order[1]!);
  while (secondWhole && second.part.left > 0) read(second, piece);
  for (const i of order.slice(2)) begin(i);
  while (reading.some((r) => r.part.left > 0)) for (const r of reading) if (r.part.left > 0) read(r, piece);
}

function assertSameValue(t: import('ava').ExecutionContext, got: unknown, sent: ReturnType<typeof largeValue>['value']): void {
  const value = got as typeof sent;
  t.deepEqual(Array.from(value.x.dataSync()), Array.from(sent.x.dataSync()));
  t.deepEqual(Array.from(value.y.dataSync()), Array.from(sent.y.dataSync()));
  t.deepEqual(Array.from(value.ids.dataSync()), [4, 5, 6]);
  t.is(value.step, 9);
}

const orders: [string, number[], boolean][] = [
  ['in order', [0, 1, 2, 3, 4, 5, 6, 7], false],
  ['begun before the head is in (staged, then copied in order)', [5, 0, 3, 1, 7, 2, 6, 4], false],
  ['one begun before the head, the others after (staged, then copied in at its offset)', [5, 0, 1, 2, 3, 4, 6, 7], true],
  ['in reverse', [7, 6, 5, 4, 3, 2, 1, 0], false],
];

for (const [name, order, secondWhole] of orders) {
  test.serial(`striped reply - parts ${name} are read straight into the tensors: the value sent, no tensor or buffer left behind`, (t) => {
    const { value, bytes } = largeValue();
    const baseline = tf.memory().numTensors;
    const pooled = bufferPoolStats().outstanding;
    const decoder = defaultCodec.decoder(bytes.byteLength)!;
    let ended: (Frame | undefined)[] = [];
    const reply = new StripedReply(bytes.byteLength, { sink: decoder, direct: true }, (frame) => ended.push(frame));
    readStriped(reply, bytes, 8, order, 10_000, secondWhole);
    t.deepEqual(ended, [undefined], 'done once, with the bytes in the sink');
    t.true(decoder.complete);
    const got = decoder.result();
    assertSameValue(t, got, value);
    for (const tensor of Object.values(got as Record<string, unknown>)) if (tensor instanceof tf.Tensor) tensor.dispose();
    t.is(tf.memory().numTensors, baseline, 'only the tensors of the value were made');
    t.is(bufferPoolStats().outstanding, pooled, 'staged parts gave their buffers back');
    ended = [];
    for (const tensor of Object.values(value)) if (tensor instanceof tf.Tensor) tensor.dispose();
  });
}

test.serial('striped reply - where reads may not go into the sink, parts are gathered and copied in order once whole', (t) => {
  const { value, bytes } = largeValue();
  const decoder = defaultCodec.decoder(bytes.byteLength)!;
  const ended: (Frame | undefined)[] = [];
  const reply = new StripedReply(bytes.byteLength, { sink: decoder, direct: false }, (frame) => ended.push(frame));
  readStriped(reply, bytes, 8, [3, 0, 1, 2, 4, 5, 6, 7], 50_000);
  t.deepEqual(ended, [undefined]);
  const got = decoder.result() as Record<string, Tensor | number>;
  assertSameValue(t, got, value);
  for (const v of [...Object.values(got), ...Object.values(value)]) if (v instanceof tf.Tensor) v.dispose();
});

test.serial('striped reply - without a sink, the whole reply comes in one frame of its own', (t) => {
  const bytes = Uint8Array.from({ length: 3_000_001 }, (_, i) => (i * 13) & 0xff);
  const ended: (Frame | undefined)[] = [];
  const reply = new StripedReply(bytes.byteLength, { sink: undefined, direct: true }, (frame) => ended.push(frame));
  readStriped(reply, bytes, 8, [2, 1, 0, 3, 4, 5, 6, 7], 64 * 1024);
  t.is(ended.length, 1);
  t.true(Buffer.from(ended[0]!.bytes).equals(Buffer.from(bytes)));
  ended[0]!.release();
});

test.serial('striped reply - dropped half way (a lane lost), the decode fails and leaves no tensors and no buffers', (t) => {
  const { value, bytes } = largeValue();
  const baseline = tf.memory().numTensors;
  const pooled = bufferPoolStats().outstanding;
  const decoder: FrameDecoder = defaultCodec.decoder(bytes.byteLength)!;
  let ended = 0;
  const reply = new StripedReply(bytes.byteLength, { sink: decoder, direct: true }, () => ended++);
  const parts = partsOf(bytes.byteLength, 8);
  // A later part staged, the first one read whole, then the lanes go.
  const staged = reply.part(parts[5]!.offset, parts[5]!.length);
  staged.target().set(bytes.subarray(parts[5]!.offset, parts[5]!.offset + 100));
  staged.advance(100);
  const first = reply.part(0, parts[0]!.length);
  for (let at = 0; first.left > 0; ) {
    const into = first.target();
    into.set(bytes.subarray(at, at + into.byteLength));
    at += into.byteLength;
    first.advance(into.byteLength);
  }
  reply.drop();
  t.is(ended, 0, 'never done');
  t.throws(() => decoder.result(), { message: /cut off/ });
  t.is(tf.memory().numTensors, baseline, 'the tensors reserved for it are gone');
  t.is(bufferPoolStats().outstanding, pooled, 'the staged part gave its buffer back');
  for (const tensor of Object.values(value)) if (tensor instanceof tf.Tensor) tensor.dispose();
});

/**
 * An owner whose request 1 takes replies up to 10 MB and request 2 up to 100 bytes, each
 * pending until refused or settled (as a connection's); records what it is told.
 */
function fakeOwner(): LaneOwner & { said: string[]; touched: number } {
  const said: string[] = [];
  const limits = new Map([[1, 10e6], [2, 100]]);
  const owner = {
    said,
    touched: 0,
    accepts: (id: number, size: number) => {
      const limit = limits.get(id);
      return limit === undefined ? 'fail' : size <= limit ? undefined : `over ${limit} bytes`;
    },
    refuse: (id: number, why: string) => {
      limits.delete(id);
      said.push(`refuse ${id}: ${why}`);
    },
    sinkFor: () => undefined,
    readsIntoSink: true,
    settleStriped: (id: number, frame: Frame | undefined) => {
      limits.delete(id);
      said.push(`settled ${id} with ${frame?.byteLength} bytes`);
      frame?.release();
    },
    touch: () => void owner.touched++,
    fail: (why: string) => void said.push(`fail: ${why}`),
  };
  return owner;
}

test.serial('reply lanes - a part is checked before memory is kept for it: request, size, bounds, overlap, count', (t) => {
  const owner = fakeOwner();
  const lanes = new ReplyLanes(owner);
  const error = (placed: ReturnType<ReplyLanes['place']>) => ('error' in placed ? placed.error : undefined);
  t.regex(error(lanes.place(9, 1000, 0, 10))!, /request 9, which does not take it/, 'no such request');
  t.regex(error(lanes.place(1, 1000, 990, 20))!, /outside its reply/, 'past the reply\'s end');
  t.regex(error(lanes.place(1, 1000, 0, 0))!, /outside its reply/, 'empty');
  t.true('part' in lanes.place(1, 1000, 0, 500));
  t.regex(error(lanes.place(1, 1001, 500, 500))!, /sizes 1000 and 1001/, 'another size for the same reply');
  t.regex(error(lanes.place(1, 1000, 400, 200))!, /overlapping/, 'overlapping');
  t.deepEqual(owner.said, [], 'no request was settled or refused by a bad part');

  // A reply too large for its request: refused at once, its parts passed over, then forgotten.
  t.deepEqual(lanes.place(2, 1000, 0, 600), { discard: true });
  t.deepEqual(owner.said, ['refuse 2: over 100 bytes']);
  t.deepEqual(lanes.place(2, 1000, 600, 400), { discard: true });
  t.regex(error(lanes.place(2, 1000, 0, 10))!, /request 2, which does not take it/, 'a refused reply that came whole is forgotten');

  const many = new ReplyLanes(fakeOwner());
  for (let i = 0; i < 64; i++) t.true('part' in many.place(1, 1000, i * 10, 10));
  t.regex(error(many.place(1, 1000, 640, 10))!, /over 64 parts/);
  many.close();
  lanes.close();
});

test.serial('reply lanes - a lane lost while a reply is coming fails the first connection at once; a lane lost between replies does not', (t) => {
  const owner = fakeOwner();
  const lanes = new ReplyLanes(owner);
  const lane = { closed: 0, close() { this.closed++; } };
  const other = { closed: 0, close() { this.closed++; } };
  lanes.add(lane);
  lanes.add(other);
  lanes.laneLost(lane);
  t.deepEqual(owner.said, [], 'nothing was coming');
  t.is(lanes.size, 1);
  const placed = lanes.place(1, 1000, 0, 500);
  if (!('part' in placed)) return t.fail('the part was refused');
  lanes.laneLost(other);
  t.deepEqual(owner.said, ['fail: lost a lane while a striped reply was coming']);
  lanes.close();
  t.is(other.closed, 0, 'a lane that is gone is not closed again');
});

test.serial('reply lanes - bytes on a lane are progress of the request; parts that complete a reply settle it once, and it is forgotten', (t) => {
  const owner = fakeOwner();
  const lanes = new ReplyLanes(owner);
  const bytes = Uint8Array.from({ length: 1000 }, (_, i) => i & 0xff);
  for (const [offset, length] of [[600, 400], [0, 600]] as const) {
    const placed = lanes.place(1, 1000, offset, length);
    if (!('part' in placed)) return t.fail('the part was refused');
    for (let at = offset; at < offset + length; at += 100) {
      const touched = owner.touched;
      placed.part.target().set(bytes.subarray(at, at + 100));
      placed.part.advance(100);
      t.true(owner.touched > touched, 'each read on a lane restarts the owner\'s stall timer');
    }
  }
  t.deepEqual(owner.said, ['settled 1 with 1000 bytes'], 'settled once, whole');
  t.true('error' in lanes.place(1, 1000, 0, 10), 'the settled request takes no more parts');
  lanes.close();
});
