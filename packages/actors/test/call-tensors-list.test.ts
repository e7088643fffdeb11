/**
 * The list a call's tensors are collected in (agent/call-tensors.ts): what a
 * long call makes and disposes as it goes does not pile up, and a tensor
 * counted twice (made, then handed over as a decoded reply) ends once.
 */
import test from 'ava';
import { tf } from '@tensorbus/core';
import { CallTensors, collectTensors } from '../src/agent/call-tensors.js';

test('a call that makes and disposes 10,000 tensors holds about twice its live ones, and ends the live ones it did not keep', (t) => {
  const before = tf.memory().numTensors;
  const collection = new CallTensors();
  const kept: tf.Tensor[] = [];
  collection.run(() => {
    for (let i = 0; i < 10_000; i++) {
      const scratch = tf.scalar(i);
      if (i % 2_000 === 0) kept.push(tf.keep(tf.add(scratch, 1)));
      else if (i % 1_000 === 0) tf.add(scratch, 2); // left alive: the call's to end
      scratch.dispose();
    }
  });
  t.true(collection.entries <= 2 * 10 + 64, `entries ${collection.entries}`);
  t.is(collection.close(), 5, 'the five tensors made, left alive and not kept are disposed');
  t.true(kept.every((k) => !k.isDisposed), 'kept tensors stay');
  tf.dispose(kept);
  t.is(tf.memory().numTensors, before);
});

test('a tensor counted twice is disposed once and handed over once', (t) => {
  const before = tf.memory().numTensors;
  const collection = new CallTensors();
  const made = collection.run(() => tf.ones([2]));
  collection.add(made);
  t.is(collection.close(), 1);
  t.true(made.isDisposed);
  const { result, made: handed } = collectTensors(() => {
    const x = tf.zeros([3]);
    return x;
  });
  t.deepEqual(handed, [result]);
  result.dispose();
  // Counted at its making and again (a decoded reply): handed over once.
  const twice = new CallTensors();
  const reply = twice.run(() => tf.zeros([4]));
  twice.add(reply);
  t.deepEqual(twice.handOver(), [reply]);
  reply.dispose();
  t.is(tf.memory().numTensors, before);
});
