import test from 'ava';
import { defaultCodec as codec, tf } from '../src/index.js';
import { viewValues } from '../src/codec/tensor-data.js';

// Decoding hands tfjs typed arrays that view the received frame. On WASM the
// backend then copies them into its heap, so the view is checked where the
// codec makes it (viewValues), and end to end on the CPU backend, which keeps
// the arrays it is given.

/** The frame's data section start, where the first tensor block lies. */
function firstBlock(frame: Uint8Array): number {
  const envelopeLength = new DataView(frame.buffer, frame.byteOffset).getUint32(4, true);
  return Math.ceil((8 + envelopeLength) / 8) * 8;
}

test('codec - float32, int32 and complex64 values view an aligned frame instead of copying it', (t) => {
  const frame = new Uint8Array(64);
  new Float32Array(frame.buffer, 16, 4).set([1, 2, 3, 4]);
  const floats = viewValues('float32', frame, 16, 4);
  t.is(floats.buffer, frame.buffer);
  t.is(floats.byteOffset, 16);
  t.deepEqual([...floats], [1, 2, 3, 4]);
  const ints = viewValues('int32', frame, 32, 2);
  t.is(ints.buffer, frame.buffer);
  const complex = viewValues('complex64', frame, 16, 2);
  t.is(complex.buffer, frame.buffer);
  t.is(complex.length, 4, 'complex64 values are interleaved (re, im)');
  frame[16] = 7; // a view sees later writes
  t.not(floats[0], 1);
});

test('codec - bool values view the frame; bytes other than 0 and 1 are normalised on a copy', (t) => {
  const frame = new Uint8Array([9, 9, 1, 0, 1, 9, 0, 2]);
  const view = viewValues('bool', frame, 2, 3);
  t.is(view.buffer, frame.buffer);
  t.deepEqual([...view], [1, 0, 1]);
  const normalised = viewValues('bool', frame, 6, 2);
  t.not(normalised.buffer, frame.buffer);
  t.deepEqual([...normalised], [0, 1]);
});

test('codec - values at an address not aligned for their type are copied, not viewed', (t) => {
  const backing = new Uint8Array(40);
  const frame = backing.subarray(1); // a frame at an odd address inside a larger buffer
  new DataView(frame.buffer, frame.byteOffset).setFloat32(8, 2.5, true);
  const floats = viewValues('float32', frame, 8, 1);
  t.not(floats.buffer, frame.buffer);
  t.deepEqual([...floats], [2.5]);
});

test('codec - a frame inside a larger buffer at any offset decodes', (t) => {
  const x = tf.tensor([[1, 2], [3, 4]]);
  const frame = codec.encode({ x });
  for (const shift of [0, 1, 3, 4, 8]) {
    const backing = new Uint8Array(frame.byteLength + shift);
    backing.set(frame, shift);
    const { x: y } = codec.decode(backing.subarray(shift)) as { x: tf.Tensor };
    t.deepEqual([...y.dataSync()], [1, 2, 3, 4], `at offset ${shift}`);
    y.dispose();
  }
  x.dispose();
});

test.serial('codec - on the CPU backend a decoded tensor views the received frame', async (t) => {
  const previous = tf.getBackend();
  await tf.setBackend('cpu');
  try {
    const x = tf.tensor([1.5, 2.5, 3.5]);
    const i = tf.tensor([1, 2], [2], 'int32');
    const frame = codec.encode([x, i]);
    const [y, j] = codec.decode(frame) as tf.Tensor[];
    const yValues = tf.engine().readSync(y!.dataId) as Float32Array;
    t.is(yValues.buffer, frame.buffer, 'float32 values are the frame bytes');
    t.is(yValues.byteOffset, firstBlock(frame));
    t.is((tf.engine().readSync(j!.dataId) as Int32Array).buffer, frame.buffer, 'int32 too');
    t.deepEqual([...y!.dataSync()], [1.5, 2.5, 3.5]);
    tf.dispose([x, i, y!, j!]);
  } finally {
    await tf.setBackend(previous);
  }
  t.is(tf.getBackend(), previous);
});

test.serial('codec - complex64 tensors round-trip on the CPU backend too', async (t) => {
  const previous = tf.getBackend();
  await tf.setBackend('cpu');
  try {
    const z = tf.complex([1, 2], [3, 4]);
    const w = codec.decode(codec.encode(z)) as tf.Tensor;
    t.is(w.dtype, 'complex64');
    t.deepEqual([...w.dataSync()], [1, 3, 2, 4]);
    tf.dispose([z, w]);
  } finally {
    await tf.setBackend(previous);
  }
});
