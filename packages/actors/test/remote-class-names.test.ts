import test from 'ava';
import { InvalidArgumentError, tf } from '@tensorbus/core';
import { remoteClass } from '../src/index.js';
import { startGroup, stopEverything, transportKinds } from './helpers.js';

/** A module that names its weights, as Keras-style code does. */
const NamedWeights = remoteClass(
  'test.names.NamedWeights',
  class {
    readonly w: tf.Variable;
    constructor(name: string) {
      this.w = tf.variable(tf.zeros([2]), true, name);
    }
    size(): number {
      return this.w.size;
    }
    dispose(): void {
      this.w.dispose();
    }
  },
);

test.after.always(stopEverything);

for (const kind of transportKinds('without-tcp')) {
  test.serial(`${kind.name} - remote class - a second instance naming the same tf.variable says what to do instead of tfjs's bare refusal`, async (t) => {
    const [a] = await startGroup(kind, ['a', 'w1']);
    const name = `test-names/${kind.name}/w`;
    const first = a!.remote('w1', NamedWeights, [name]);
    t.is(await first.rpcSync().size(), 2);
    const second = a!.remote('w1', NamedWeights, [name]);
    const error = await t.throwsAsync(second.toHere(), { code: 'RREF_CREATION_FAILED' });
    const cause = error!.cause as InvalidArgumentError;
    t.true(cause instanceof InvalidArgumentError, 'the cause keeps its class across the wire');
    t.regex(cause.message, /names a tf\.variable 'test-names\/[\w-]+\/w' that another instance in this process already has/);
    t.regex(cause.message, /leave the name out .* or make it unique per instance/);
    await second.release().catch(() => undefined);
    await first.release();
  });
}
