import test from 'ava';
import type { Tensor } from '@tensorflow/tfjs';
import { defaultCodec, Frame, registerExtension, SerializationError, STREAM_MIN_BYTES, tensorBackend, tf, type FrameDecoder } from '../src/index.js';

// Large frames are sent as they are read and decoded as they arrive (on the WASM backend, this
// machine's). Every test is serial: tf.memory() counts must not see another test's tensors.

const codec = defaultCodec;
/** Floats in a tensor just over the streaming threshold. */
const BIG = STREAM_MIN_BYTES / 4 + 1024;

/** A float32 tensor of `n` values that differ from place to place (and from seed to seed). */
function pattern(n: number, seed: number): Tensor {
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) values[i] = ((i * 7919 + seed) % 100_003) / 7;
  return tf.tensor1d(values);
}

function bytesOf(tensor: Tensor): Buffer {
  const values = tensor.dataSync() as Float32Array | Int32Array | Uint8Array;
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}

/** Feeds `frame` to `decoder` in pieces of the given sizes (the last repeated), calling `between` after each. */
function feed(decoder: FrameDecoder, frame: Uint8Array, sizes: number[], between: () => void = () => undefined): void {
  let at = 0;
  let i = 0;
  while (at < frame.byteLength) {
    const target = decoder.target();
    const n = Math.min(target.byteLength, sizes[Math.min(i++, sizes.length - 1)]!, frame.byteLength - at);
    target.set(frame.subarray(at, at + n));
    decoder.advance(n);
    at += n;
    between();
  }
}

test.serial('streaming - runs on the WASM backend here', (t) => {
  t.is(tensorBackend(), 'wasm');
});

test.serial('streaming - small frames are not streamed', (t) => {
  const x = tf.ones([1024]);
  const small = codec.encodeOutgoing({ x });
  t.true(small instanceof Frame);
  small.release();
  t.is(codec.decoder(STREAM_MIN_BYTES - 1), undefined);
  t.truthy(codec.decoder(STREAM_MIN_BYTES));
  x.dispose();
});

test.serial('streaming - a deferred frame reads, in pieces of any size, as the whole frame, after the sender disposed its tensors', (t) => {
  const baseline = tf.memory().numTensors;
  const x = pattern(BIG, 1);
  const value = { x, ids: tf.tensor1d([1, 2, 3], 'int32'), words: tf.tensor1d(['a', 'bc']), flags: tf.tensor1d([true, false, true], 'bool'), step: 7 };
  const whole = Buffer.from(codec.encode(value));
  const frame = codec.encodeOutgoing(value);
  if (frame instanceof Frame) return t.fail('a large frame came back whole');
  t.is(frame.byteLength, whole.byteLength);
  // The sender's tensors may go at once: the frame keeps what it will read.
  for (const tensor of [x, value.ids, value.words, value.flags]) tensor.dispose();
  const out = Buffer.alloc(frame.byteLength);
  const sizes = [1, 7, 4093, 1 << 20, 3 << 20];
  for (let at = 0, i = 0; at < out.byteLength; i++) {
    const n = Math.min(sizes[i % sizes.length]!, out.byteLength - at);
    frame.read(at, out.subarray(at, at + n));
    at += n;
  }
  t.true(out.equals(whole), 'the pieces make the frame encode() writes');
  t.true(Buffer.from(frame.toBytes()).equals(whole));
  const letGo = frame.hold();
  frame.release();
  t.true(tf.memory().numTensors > baseline, 'a transport still holds it');
  letGo();
  t.is(tf.memory().numTensors, baseline);
  t.throws(() => frame.read(0, new Uint8Array(8)), { instanceOf: SerializationError, message: /released/ });
});

test.serial('streaming - a frame decoded as it arrives gives the values sent, in tensors the caller owns', (t) => {
  const x = pattern(BIG, 2);
  const value = { x, ids: tf.tensor1d([4, -5], 'int32'), flags: tf.tensor1d([true, false], 'bool'), words: tf.tensor1d(['q']), empty: tf.zeros([0]), nested: [{ k: 'v' }], again: x };
  const frame = codec.encode(value);
  const expected = bytesOf(x);
  for (const tensor of new Set(Object.values(value))) if (tensor instanceof tf.Tensor) tensor.dispose();
  const baseline = tf.memory().numTensors;
  const decoder = codec.decoder(frame.byteLength)!;
  feed(decoder, frame, [3, 5, 1000, 65_536, 1 << 20]);
  t.true(decoder.complete);
  const got = decoder.result() as typeof value;
  t.true(bytesOf(got.x).equals(expected));
  t.deepEqual(got.x.shape, [BIG]);
  t.deepEqual([...got.ids.dataSync()], [4, -5]);
  t.is(got.flags.dtype, 'bool');
  t.deepEqual([...got.flags.dataSync()], [1, 0]);
  t.deepEqual([...got.words.dataSync()], ['q']);
  t.deepEqual(got.empty.shape, [0]);
  t.deepEqual(got.nested, [{ k: 'v' }]);
  t.true(bytesOf(got.again).equals(expected), 'a tensor sent twice arrives twice');
  t.is(tf.memory().numTensors, baseline + 6);
  for (const tensor of [got.x, got.ids, got.flags, got.words, got.empty]) tensor.dispose();
  t.true(bytesOf(got.again).equals(expected), 'each of the two is the caller\'s to dispose');
  got.again.dispose();
  t.is(tf.memory().numTensors, baseline);
});

test.serial('streaming - the WASM heap growing while a frame arrives does not disturb it', (t) => {
  const x = pattern(BIG, 3);
  const frame = codec.encode([x]);
  const expected = bytesOf(x);
  x.dispose();
  const grown: Tensor[] = [];
  const decoder = codec.decoder(frame.byteLength)!;
  feed(decoder, frame, [8, 64 << 10], () => {
    if (grown.length < 12) grown.push(tf.ones([8 << 20])); // 32 MB each: the heap grows under the reads
  });
  const [got] = decoder.result() as [Tensor];
  t.true(bytesOf(got).equals(expected));
  got.dispose();
  for (const tensor of grown) tensor.dispose();
});

test.serial('streaming - a malformed frame is read to its end, then refused, leaving no tensors', (t) => {
  const x = pattern(BIG, 4);
  const frame = codec.encode({ x, y: tf.ones([4]) });
  x.dispose();
  const baseline = tf.memory().numTensors;
  const badMagic = Uint8Array.from(frame.subarray(0, 8));
  badMagic[0] = 0x00;
  const longEnvelope = Uint8Array.from(frame.subarray(0, 8));
  longEnvelope.set([0xff, 0xff, 0xff, 0x7f], 4);
  const cases: Array<[string, Uint8Array, RegExp]> = [
    ['bad magic', Buffer.concat([badMagic, frame.subarray(8)]), /bad magic/],
    ['envelope longer than the frame', Buffer.concat([longEnvelope, frame.subarray(8)]), /overruns/],
    ['cut short', frame.subarray(0, frame.byteLength - 8), /outside/],
  ];
  for (const [what, bytes, message] of cases) {
    const decoder = codec.decoder(bytes.byteLength)!;
    t.notThrows(() => feed(decoder, bytes, [1 << 20]), what);
    t.true(decoder.complete, what);
    t.throws(() => decoder.result(), { instanceOf: SerializationError, message }, what);
    t.is(tf.memory().numTensors, baseline, what);
  }
});

test.serial('streaming - a reply abandoned or cut off leaves no tensors', (t) => {
  const x = pattern(BIG, 5);
  const frame = codec.encode([x, x]);
  x.dispose();
  const baseline = tf.memory().numTensors;
  const half = frame.subarray(0, frame.byteLength >> 1);

  const abandonedEarly = codec.decoder(frame.byteLength)!;
  feed(abandonedEarly, half, [1 << 20]);
  abandonedEarly.abandon();
  t.true(tf.memory().numTensors > baseline, 'kept while bytes may still arrive into it');
  feed(abandonedEarly, frame.subarray(half.byteLength), [1 << 20]);
  t.is(tf.memory().numTensors, baseline, 'abandoned, then complete');

  const abandonedLate = codec.decoder(frame.byteLength)!;
  feed(abandonedLate, frame, [1 << 20]);
  abandonedLate.abandon();
  t.is(tf.memory().numTensors, baseline, 'complete, then abandoned');

  const cut = codec.decoder(frame.byteLength)!;
  feed(cut, half, [1 << 20]);
  cut.fail();
  t.is(tf.memory().numTensors, baseline, 'cut off');
  t.throws(() => cut.result(), { instanceOf: SerializationError, message: /cut off/ });
});

class Labelled {
  constructor(readonly label: string, readonly weights: Tensor) {}
}
registerExtension<Labelled, [string, Tensor], undefined>({
  type: 88,
  Class: Labelled,
  write: (value) => [value.label, value.weights],
  read: ([label, weights]) => new Labelled(label, weights),
});

test.serial('streaming - a frame with extension values is gathered whole and decoded as usual', (t) => {
  const x = pattern(BIG, 6);
  const frame = codec.encode({ item: new Labelled('w', x) });
  const expected = bytesOf(x);
  x.dispose();
  const baseline = tf.memory().numTensors;
  const decoder = codec.decoder(frame.byteLength)!;
  feed(decoder, frame, [100, 1 << 20]);
  const { item } = decoder.result() as { item: Labelled };
  t.true(item instanceof Labelled);
  t.is(item.label, 'w');
  t.true(bytesOf(item.weights).equals(expected));
  item.weights.dispose();
  t.is(tf.memory().numTensors, baseline);
});
