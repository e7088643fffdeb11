/**
 * TENSORBUS_TEST_TRANSPORTS, as a user who narrows the suites sees it: a list
 * selects exactly the kinds it names (in both kind sets, `nats` standing for
 * `nats-shm`), and a name nobody knows is a clear error naming the known
 * kinds, from transportKinds as from transportKind.
 */
import test, { type ExecutionContext } from 'ava';
import { InvalidArgumentError } from '@tensorbus/core';
import { transportKind, transportKinds, type TransportKindName } from '../src/testing/index.js';

const ALL = ['local', 'nats-bus', 'nats-tcp', 'nats-shm'];

/** Sets TENSORBUS_TEST_TRANSPORTS to `value` (unset for undefined) until the test ends. */
function withVariable(tt: ExecutionContext, value: string | undefined): void {
  const before = process.env.TENSORBUS_TEST_TRANSPORTS;
  if (value === undefined) delete process.env.TENSORBUS_TEST_TRANSPORTS;
  else process.env.TENSORBUS_TEST_TRANSPORTS = value;
  tt.teardown(() => {
    if (before === undefined) delete process.env.TENSORBUS_TEST_TRANSPORTS;
    else process.env.TENSORBUS_TEST_TRANSPORTS = before;
  });
}

const names = (kinds: { name: string }[]) => kinds.map((k) => k.name);

// Serial: each test sets the process's environment.
test.serial('unset or empty, every kind runs; without-tcp leaves out nats-tcp alone', (tt) => {
  for (const value of [undefined, '', ' , ']) {
    withVariable(tt, value);
    tt.deepEqual(names(transportKinds()), ALL, `value ${JSON.stringify(value)}`);
    tt.deepEqual(names(transportKinds('all')), ALL);
    tt.deepEqual(names(transportKinds('without-tcp')), ['local', 'nats-bus', 'nats-shm']);
  }
});

test.serial('a list selects exactly the kinds it names, once each, spaces and repeats aside', (tt) => {
  withVariable(tt, ' nats-bus , local,local');
  tt.deepEqual(names(transportKinds()), ['local', 'nats-bus']);
  tt.deepEqual(names(transportKinds('without-tcp')), ['local', 'nats-bus']);
  withVariable(tt, 'nats-tcp');
  tt.deepEqual(names(transportKinds()), ['nats-tcp']);
  tt.deepEqual(names(transportKinds('without-tcp')), [], 'a suite that leaves out nats-tcp runs no kind');
  withVariable(tt, 'nats-tcp,nats-shm');
  tt.deepEqual(names(transportKinds('without-tcp')), ['nats-shm']);
});

test.serial('nats stands for nats-shm, the default deployment', (tt) => {
  withVariable(tt, 'nats');
  tt.deepEqual(names(transportKinds()), ['nats-shm']);
  tt.deepEqual(names(transportKinds('without-tcp')), ['nats-shm']);
  withVariable(tt, 'nats,nats-shm,local');
  tt.deepEqual(names(transportKinds()), ['local', 'nats-shm']);
});

test.serial('an unknown name is an InvalidArgumentError naming it and every known kind', (tt) => {
  for (const value of ['tcp', 'local,NATS', 'nats_bus', 'local;nats-bus']) {
    withVariable(tt, value);
    for (const set of ['all', 'without-tcp'] as const) {
      const error = tt.throws(() => transportKinds(set), { instanceOf: InvalidArgumentError }, `${value} (${set})`);
      tt.is(error?.code, 'INVALID_ARGUMENT');
      tt.regex(error?.message ?? '', /TENSORBUS_TEST_TRANSPORTS/);
      tt.true(error?.message.includes(`'${value.split(',').pop()}'`), error?.message);
      for (const known of [...ALL, 'nats']) tt.true(error?.message.includes(known), `${error?.message} names ${known}`);
    }
  }
});

test.serial('transportKind gives the kind named, whatever the variable says, and refuses a name it does not know', (tt) => {
  withVariable(tt, 'local');
  for (const name of ALL as TransportKindName[]) {
    const kind = transportKind(name);
    tt.is(kind.name, name);
    tt.is(kind.transport, name === 'local' ? 'local' : 'nats');
    tt.is(kind.route as string, ({ local: 'in-process', 'nats-bus': 'nats', 'nats-tcp': 'tcp', 'nats-shm': 'shm' } as Record<string, string>)[name]);
  }
  tt.is(transportKind('nats' as TransportKindName).name, 'nats-shm', 'the alias holds here too');
  // From JavaScript, or a name from the environment: not a TypeError later, when the test calls create().
  const error = tt.throws(() => transportKind('nats-udp' as TransportKindName), { instanceOf: InvalidArgumentError });
  tt.regex(error?.message ?? '', /'nats-udp'.*local, nats-bus, nats-tcp, nats-shm/);
});
