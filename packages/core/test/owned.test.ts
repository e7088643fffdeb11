import test from 'ava';
import { SerializationError, tf } from '@tensorbus/core';
import { acquireFrame, bufferPoolStats, OutgoingFrame, Owned } from '@tensorbus/core/internal';
import { defaultCodec } from '@tensorbus/core';

test('owned - memory is freed once, when the last share is released; a share releases at most once', (t) => {
  let freed = 0;
  const first = Owned.own('memory', () => freed++);
  const second = first.retain();
  first.release();
  first.release(); // a second release of the same share does nothing
  t.is(freed, 0, 'another share still holds it');
  t.true(second.held);
  t.false(first.held);
  const third = second.retain();
  second.release();
  t.is(freed, 0);
  third.release();
  third.release();
  t.is(freed, 1);
  t.throws(() => first.retain(), { instanceOf: SerializationError }, 'no share can be made from a released one');
});

test('owned - a pooled frame gives its memory back with its last share', (t) => {
  const before = bufferPoolStats().outstanding;
  const handle = acquireFrame(1 << 20);
  const reader = handle.retain();
  t.is(bufferPoolStats().outstanding, before + 1);
  handle.release();
  t.is(bufferPoolStats().outstanding, before + 1, 'still read elsewhere');
  reader.release();
  reader.release();
  t.is(bufferPoolStats().outstanding, before, 'given back once');
});

test.serial('owned - a deferred frame keeps its tensors while any share is held, and a share cannot be taken once all are gone', (t) => {
  const baseline = tf.memory().numTensors;
  const x = tf.zeros([512, 1024]);
  const frame = defaultCodec.encodeOutgoing({ x }) as OutgoingFrame;
  x.dispose();
  t.true(frame instanceof OutgoingFrame);
  const share = frame.retain();
  const letGo = frame.hold();
  frame.release();
  frame.release();
  t.true(tf.memory().numTensors > baseline, 'transports still hold it');
  const target = new Uint8Array(16);
  frame.read(0, target); // readable while shares are held
  share.release();
  letGo();
  letGo();
  t.is(tf.memory().numTensors, baseline);
  t.throws(() => frame.hold(), { instanceOf: SerializationError });
  t.throws(() => frame.read(0, target), { instanceOf: SerializationError });
});
