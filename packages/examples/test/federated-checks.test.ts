/**
 * The federated aggregation server's checks of what a client sends
 * (src/federated/checks.ts), on values as the codec hands them to a remote
 * function: each refusal is an InvalidArgumentError, and nothing is kept.
 */
import test from 'ava';
import { InvalidArgumentError, tf } from '@tensorbus/core';
import { checkClient, checkInteger, checkWeights } from '../src/federated/checks.js';

const shapes = [[4, 16], [16], [16, 3], [3]];
const tickets = new Map([['tab1', 'a'.repeat(32)], ['tab2', 'b'.repeat(32)]]);

test('federated checks - weights: the model\'s float32 shapes with finite numbers pass; a wrong count, shape, dtype, NaN or Infinity, or a non-tensor is refused', (t) => {
  const before = tf.memory().numTensors;
  const good = shapes.map((s) => tf.ones(s));
  t.is(checkWeights(good, shapes), good);
  const refused = (weights: unknown, message: RegExp) => t.throws(() => checkWeights(weights, shapes), { instanceOf: InvalidArgumentError, message });
  refused(good.slice(1), /an update is 4 tensors, got 3 values/);
  refused('weights', /an update is 4 tensors, got string/);
  refused([good[0], good[1], { shape: [16, 3], dtype: 'float32' }, good[3]], /weight 2 is not a tensor/);
  const transposed = tf.ones([16, 4]);
  refused([transposed, ...good.slice(1)], /weight 0 must be float32 \[4, 16\], got float32 \[16, 4\]/);
  const ints = tf.ones([3], 'int32');
  refused([...good.slice(0, 3), ints], /weight 3 must be float32 \[3\], got int32 \[3\]/);
  const infinite = tf.tensor1d([1, Number.POSITIVE_INFINITY, 0]);
  refused([...good.slice(0, 3), infinite], /weight 3 holds NaN or infinite numbers/);
  const nan = tf.fill([16], Number.NaN);
  refused([good[0], nan, ...good.slice(2)], /weight 1 holds NaN or infinite numbers/);
  tf.dispose([...good, transposed, ints, infinite, nan]);
  t.is(tf.memory().numTensors, before, 'the checks keep no tensor');
});

test('federated checks - a client is its name with the ticket handed out for it: another name, a wrong or missing ticket, or a long string is refused', (t) => {
  t.is(checkClient({ client: 'tab1', ticket: 'a'.repeat(32) }, tickets), 'tab1');
  for (const id of [
    { client: 'tab2', ticket: 'a'.repeat(32) },
    { client: 'tab1', ticket: 'a'.repeat(31) },
    { client: 'tab1' },
    { client: 'tab3', ticket: 'c'.repeat(32) },
    { client: 'x'.repeat(1_000_000), ticket: 'a' },
    'tab1',
    null,
  ]) {
    t.throws(() => checkClient(id, tickets), { instanceOf: InvalidArgumentError }, JSON.stringify(id)?.slice(0, 60));
  }
});

test('federated checks - integers: in range passes; fractions, NaN, strings and out-of-range values are refused', (t) => {
  t.is(checkInteger('round', 3, 1, 5), 3);
  for (const value of [0, 6, 2.5, Number.NaN, '3', undefined, 1e300]) t.throws(() => checkInteger('round', value, 1, 5), { instanceOf: InvalidArgumentError });
});
