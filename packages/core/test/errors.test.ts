import test from 'ava';
import {
  AutogradError,
  defaultCodec as codec,
  DuplicateWorkerError,
  InvalidArgumentError,
  MissingPackageError,
  PermissionDeniedError,
  RemoteError,
  RpcTimeoutError,
  RRefError,
  SerializationError,
  ShutdownError,
  TensorbusError,
  TransportError,
  UnknownFunctionError,
  WorkerUnavailableError,
} from '../src/index.js';
import { errorFromWire, errorToWire, remoteErrorFrom, type WireError } from '../src/internal.js';

function roundTrip<T>(value: T): T {
  return codec.decode(codec.encode(value)) as T;
}

const everyError: TensorbusError[] = [
  new RpcTimeoutError('no answer from w1 within 5000 ms'),
  new RemoteError({ worker: 'w1', remoteName: 'TypeError', remoteMessage: 'x is not a function', remoteStack: 'TypeError: x\n    at f (w1.js:1:1)', remoteCode: 'E_X' }),
  new WorkerUnavailableError("no worker 'w9'"),
  new UnknownFunctionError("no function 'math.nope' on 'w1'"),
  new SerializationError('cannot encode'),
  new ShutdownError(),
  new RRefError('RREF_NOT_OWNER', 'not the owner'),
  new RRefError('RREF_RELEASED', 'released'),
  new RRefError('RREF_CREATION_FAILED', 'failed', { cause: new RangeError('inner') }),
  new RRefError('RREF_OWNER_LOST', 'owner gone'),
  new AutogradError('AUTOGRAD_CONTEXT_NOT_FOUND', 'no context 7'),
  new AutogradError('AUTOGRAD_BACKWARD_FAILED', 'backward failed on w2'),
  new InvalidArgumentError('bad name'),
  new DuplicateWorkerError('taken'),
  new PermissionDeniedError('refused'),
  new MissingPackageError('NATS_URL is set but @tensorbus/nats-transport is not installed', { packageName: '@tensorbus/nats-transport' }),
  new TransportError('connection lost'),
];

for (const error of everyError) {
  test(`errors - ${error.name} ${error.code} comes back as the same class with the same code`, (t) => {
    const back = roundTrip(error);
    t.is(back.constructor, error.constructor);
    t.true(back instanceof TensorbusError);
    t.is(back.name, error.name);
    t.is(back.code, error.code);
    t.is(back.message, error.message);
    t.is(back.stack, error.stack);
    t.is(back.retryable, error.retryable);
  });
}

test('errors - a RemoteError keeps worker, remoteName, remoteMessage, remoteStack and remoteCode', (t) => {
  const error = everyError[1] as RemoteError;
  const back = roundTrip({ failure: error }).failure;
  t.true(back instanceof RemoteError);
  t.is(back.worker, 'w1');
  t.is(back.remoteName, 'TypeError');
  t.is(back.remoteMessage, 'x is not a function');
  t.is(back.remoteStack, error.remoteStack);
  t.is(back.remoteCode, 'E_X');
  t.is(back.message, "worker 'w1' raised TypeError: x is not a function");
});

test('errors - retryable and the cause chain travel', (t) => {
  const error = new WorkerUnavailableError('w1 left', { retryable: true, cause: new TransportError('closed', { cause: new Error('socket') }) });
  const back = roundTrip(error);
  t.true(back.retryable);
  t.true(back.cause instanceof TransportError);
  t.is((back.cause as Error).message, 'closed');
  t.is(((back.cause as Error).cause as Error).message, 'socket');
  const cyclic = new Error('loop');
  (cyclic as { cause?: unknown }).cause = cyclic;
  let depth = 0;
  for (let e: unknown = roundTrip(cyclic); e instanceof Error; e = e.cause) depth++;
  t.is(depth, 9, 'a cyclic cause chain is cut after 8 links');
});

test('errors - plain errors keep name, message, stack and code; JavaScript classes come back as themselves', (t) => {
  const plain = Object.assign(new Error('reset'), { code: 'ECONNRESET' });
  const custom = new Error('custom');
  custom.name = 'ValidationError';
  const [a, b, c, d] = roundTrip([plain, custom, new TypeError('bad type'), new RangeError('out of range')]);
  t.is(a!.message, 'reset');
  t.is((a as { code?: string }).code, 'ECONNRESET');
  t.is(a!.stack, plain.stack);
  t.is(b!.name, 'ValidationError');
  t.is(b!.constructor, Error);
  t.true(c instanceof TypeError);
  t.true(d instanceof RangeError);
  const abort = roundTrip(new DOMException('aborted', 'AbortError'));
  t.is(abort.name, 'AbortError', 'an abort keeps its name');
});

test('errors - errors nested in values travel anywhere', (t) => {
  const out = roundTrip({ list: [new ShutdownError()], byWorker: new Map([['w1', new RpcTimeoutError('late')]]) });
  t.true(out.list[0] instanceof ShutdownError);
  t.true(out.byWorker.get('w1') instanceof RpcTimeoutError);
});

test('errors - errorToWire omits absent fields and describes thrown non-errors', (t) => {
  const wire = errorToWire(new SerializationError('x'));
  t.deepEqual(Object.keys(wire).sort(), ['code', 'message', 'name', 'retryable', 'stack']);
  t.deepEqual(errorToWire('just a string'), { name: 'Error', message: 'just a string' });
  t.deepEqual(errorToWire({ reason: 42 }), { name: 'Error', message: '{"reason":42}' });
  t.deepEqual(errorToWire(undefined), { name: 'Error', message: 'undefined' });
});

test('errors - errorFromWire ignores fields of the wrong type and codes it does not know', (t) => {
  const odd = errorFromWire({ name: 7, message: ['x'], stack: {}, code: 'constructor', retryable: 'yes' } as unknown as WireError);
  t.is(odd.constructor, Error);
  t.is(odd.message, '');
  t.is((odd as { code?: string }).code, 'constructor');
  const proto = errorFromWire({ name: 'Error', message: 'p', code: '__proto__' });
  t.true(proto instanceof Error);
  t.is(proto.message, 'p');
  const remoteWithoutWorker = errorFromWire({ name: 'RemoteError', message: 'm', code: 'REMOTE_ERROR' });
  t.false(remoteWithoutWorker instanceof RemoteError);
  t.is((remoteWithoutWorker as { code?: string }).code, 'REMOTE_ERROR');
  t.true(errorFromWire(null as unknown as WireError) instanceof Error);
});

test('errors - remoteErrorFrom wraps what a remote function threw, and keeps tensorbus errors as they are', (t) => {
  const thrown = Object.assign(new TypeError('nope'), { code: 'E_NOPE' });
  const back = errorFromWire(remoteErrorFrom('w3', thrown));
  t.true(back instanceof RemoteError);
  const remote = back as RemoteError;
  t.is(remote.worker, 'w3');
  t.is(remote.remoteName, 'TypeError');
  t.is(remote.remoteMessage, 'nope');
  t.is(remote.remoteStack, thrown.stack);
  t.is(remote.remoteCode, 'E_NOPE');
  t.regex(remote.message, /worker 'w3' raised TypeError: nope/);
  const unknown = errorFromWire(remoteErrorFrom('w3', new UnknownFunctionError('no f')));
  t.true(unknown instanceof UnknownFunctionError);
  const thrownString = errorFromWire(remoteErrorFrom('w3', 'plain string')) as RemoteError;
  t.is(thrownString.remoteMessage, 'plain string');
  const nested = errorFromWire(remoteErrorFrom('w4', errorFromWire(remoteErrorFrom('w3', new Error('deep'))))) as RemoteError;
  t.is(nested.worker, 'w3', 'a RemoteError passed on keeps the worker that raised it');
});

test('errors - core knows no package\'s own errors: it exports no GatewayError, and a code it does not know arrives as an Error with its name and code', async (t) => {
  const core = await import('../src/index.js');
  t.false('GatewayError' in core);
  const back = errorFromWire({ name: 'GatewayError', message: 'not XML', code: 'GATEWAY_BAD_REQUEST', retryable: false });
  t.false(back instanceof TensorbusError);
  t.is(back.constructor, Error);
  t.is(back.name, 'GatewayError');
  t.is((back as Error & { code?: string }).code, 'GATEWAY_BAD_REQUEST');
  t.is(back.message, 'not XML');
});
