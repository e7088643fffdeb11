import test, { type ExecutionContext } from 'ava';
import {
  createCodec,
  defaultCodec,
  InvalidArgumentError,
  registerExtension,
  SerializationError,
  tf,
} from '../src/index.js';
import { BLOCK_ALIGN, FRAME_VERSION, HEADER_BYTES } from '../src/codec/frame.js';
import { tensorFromBytes } from '../src/codec/tensor-data.js';

// Every test here is synchronous, so tf.memory() counts are not disturbed by another test.

const codec = defaultCodec;

function roundTrip<T>(value: T, context?: unknown): T {
  return codec.decode(codec.encode(value, context), context) as T;
}

/** Disposes every tensor reachable through arrays, plain objects, Maps and Sets. */
function disposeAll(value: unknown): void {
  if (value instanceof tf.Tensor) value.dispose();
  else if (Array.isArray(value)) value.forEach(disposeAll);
  else if (value instanceof Map) value.forEach((v, k) => (disposeAll(k), disposeAll(v)));
  else if (value instanceof Set) value.forEach(disposeAll);
  else if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) Object.values(value).forEach(disposeAll);
}

/** Runs `fn` and checks that it leaves as many tensors as it found. */
function noLeak(t: ExecutionContext, fn: () => void): void {
  const before = tf.memory().numTensors;
  fn();
  t.is(tf.memory().numTensors, before, 'tensors leaked');
}

/** A complex64 tensor (WASM has no complex kernels: the codec builds them on the CPU backend). */
function complex(re: number[], im: number[], shape: number[]): tf.Tensor {
  const interleaved = new Float32Array(re.length * 2);
  re.forEach((r, i) => ((interleaved[2 * i] = r), (interleaved[2 * i + 1] = im[i]!)));
  return tensorFromBytes('complex64', shape, new Uint8Array(interleaved.buffer), 0, interleaved.byteLength);
}

/** Deterministic values for a tensor of `size` elements. */
function sample(dtype: string, size: number): number[] | string[] | boolean[] {
  const out = Array.from({ length: size }, (_, i) => ((i * 7919) % 101) - 50);
  if (dtype === 'bool') return out.map((v) => v > 0);
  if (dtype === 'string') return out.map((v) => `s${v}é`);
  if (dtype === 'float32') return out.map((v) => v / 8);
  return out;
}

function makeTensor(dtype: string, shape: number[]): tf.Tensor {
  const size = shape.reduce((a, b) => a * b, 1);
  if (dtype === 'complex64') {
    const re = sample('float32', size) as number[];
    return complex(re, re.map((v) => -v * 2), shape);
  }
  return tf.tensor(sample(dtype, size) as number[], shape, dtype as 'float32');
}

function assertSameTensor(t: ExecutionContext, actual: unknown, expected: tf.Tensor): void {
  t.true(actual instanceof tf.Tensor);
  const a = actual as tf.Tensor;
  t.is(a.dtype, expected.dtype);
  t.deepEqual(a.shape, expected.shape);
  t.deepEqual(a.dataSync(), expected.dataSync());
}

const DTYPES = ['float32', 'int32', 'bool', 'complex64', 'string'];
const SHAPES = [[], [1], [5], [0], [0, 3], [3, 0, 2], [2, 3], [2, 1, 3, 1], [1, 2, 1, 2, 1, 2, 1], [2, 1, 1, 1, 1, 1, 1, 1, 1, 2]];

for (const dtype of DTYPES) {
  test(`codec - ${dtype} tensors of every shape round-trip`, (t) => {
    noLeak(t, () => {
      for (const shape of SHAPES) {
        const x = makeTensor(dtype, shape);
        const y = roundTrip(x);
        assertSameTensor(t, y, x);
        x.dispose();
        (y as tf.Tensor).dispose();
      }
    });
  });
}

test('codec - tensors nested in arrays, objects, Maps and Sets round-trip', (t) => {
  noLeak(t, () => {
    const a = tf.tensor([[1, 2], [3, 4]]);
    const b = tf.tensor([7], [1], 'int32');
    const c = tf.tensor(['x'], [1], 'string');
    const value = { args: [a, { deep: [[b]] }], byName: new Map<unknown, unknown>([['c', c], [b, 'tensor key']]), bag: new Set([a]) };
    const out = roundTrip(value);
    assertSameTensor(t, out.args[0], a);
    assertSameTensor(t, (out.args[1] as { deep: tf.Tensor[][] }).deep[0]![0], b);
    assertSameTensor(t, out.byName.get('c'), c);
    const [key] = [...out.byName.keys()].filter((k) => k instanceof tf.Tensor);
    assertSameTensor(t, key, b);
    t.is(out.byName.get(key), 'tensor key');
    assertSameTensor(t, [...out.bag][0], a);
    disposeAll([a, b, c, out]);
  });
});

test('codec - a tf.Variable travels as a tensor of its value', (t) => {
  noLeak(t, () => {
    const initial = tf.tensor([1.5, 2.5]);
    const v = tf.variable(initial, true, 'codec-test-variable');
    initial.dispose();
    const out = roundTrip({ v });
    t.false(out.v instanceof tf.Variable);
    assertSameTensor(t, out.v, v);
    v.dispose();
    out.v.dispose();
  });
});

test('codec - a tensor sent twice travels once and arrives as two tensors', (t) => {
  noLeak(t, () => {
    const x = tf.ones([256]);
    const once = codec.encode([x]).byteLength;
    const twice = codec.encode([x, x]);
    t.true(twice.byteLength < once + 64, 'the block is not repeated');
    const [y1, y2] = codec.decode(twice) as tf.Tensor[];
    t.not(y1, y2);
    assertSameTensor(t, y1, x);
    assertSameTensor(t, y2, x);
    disposeAll([x, y1, y2]);
  });
});

test('codec - encode/decode cycles keep tf.memory() at its baseline', (t) => {
  const x = tf.randomNormal([64, 64]);
  const y = tf.tensor(['a', 'b']);
  noLeak(t, () => {
    for (let i = 0; i < 200; i++) disposeAll(roundTrip({ x, i, more: [x, y, new Map([[i, x]]), new Set([y])] }));
  });
  disposeAll([x, y]);
});

test('codec - the frame is a header, the envelope, then 8-byte-aligned tensor blocks', (t) => {
  noLeak(t, () => {
    const a = tf.tensor([1, 2, 3], [3], 'float32'); // 12 bytes
    const b = tf.tensor([4, 5], [2], 'int32'); // 8 bytes
    const frame = codec.encode(['call', a, b]);
    t.deepEqual([...frame.subarray(0, 4)], [0x54, 0x42, FRAME_VERSION, 0]);
    const envelopeLength = new DataView(frame.buffer, frame.byteOffset).getUint32(4, true);
    const dataStart = Math.ceil((HEADER_BYTES + envelopeLength) / BLOCK_ALIGN) * BLOCK_ALIGN;
    t.true(frame.subarray(HEADER_BYTES + envelopeLength, dataStart).every((byte) => byte === 0), 'padding is zero');
    t.deepEqual(new Float32Array(frame.slice(dataStart, dataStart + 12).buffer), new Float32Array([1, 2, 3]));
    t.deepEqual(new Int32Array(frame.slice(dataStart + 16, dataStart + 24).buffer), new Int32Array([4, 5]));
    t.is(frame.byteLength, dataStart + 24, 'no trailing padding');
    disposeAll([a, b]);
  });
});

test('codec - a message without tensors has no data section', (t) => {
  const frame = codec.encode([1, 2, 3, 'hello']);
  t.is(frame.byteLength, HEADER_BYTES + new DataView(frame.buffer, frame.byteOffset).getUint32(4, true));
});

test('codec - plain data round-trips: nested arrays, objects, null, undefined, numbers, strings', (t) => {
  const value = {
    n: [0, 1, -1, 127, 128, -33, 65535, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 - 1, 0.1, -1e300, NaN, Infinity, -Infinity],
    s: ['', 'é', '日本語', 'x'.repeat(70_000)],
    nested: [[[[[]]]], { a: { b: { c: [null, undefined, true, false] } } }],
    empty: {},
    missing: undefined,
    manyKeys: Object.fromEntries(Array.from({ length: 70_000 }, (_, i) => [`k${i}`, i])),
  };
  const out = roundTrip(value);
  t.deepEqual(out, value);
  t.true('missing' in out, 'an undefined property keeps its key');
  t.is(roundTrip(undefined), undefined);
  t.is(roundTrip(null), null);
  t.is(roundTrip('top'), 'top');
});

test('codec - Maps round-trip with non-string keys, nested in arrays, objects, Sets and Maps', (t) => {
  const inner = new Map<unknown, unknown>([[1, 'one'], [2n, 'two'], [null, 'null'], [true, 'yes'], [[1, 2], 'array key'], [{ k: 1 }, 'object key']]);
  const value = {
    inArray: [inner],
    inObject: { m: inner },
    inSet: new Set([inner]),
    inMap: new Map<unknown, unknown>([[inner, inner]]),
    empty: new Map(),
  };
  const out = roundTrip(value);
  t.deepEqual(out, value);
  t.true(out.inArray[0] instanceof Map);
  t.is(out.inArray[0]!.get(1), 'one');
  t.is(out.inArray[0]!.get(2n), 'two');
  const [[k, v]] = [...out.inMap];
  t.true(k instanceof Map && v instanceof Map);
});

test('codec - Sets, Dates and BigInts round-trip', (t) => {
  const value = {
    set: new Set([1, 'a', null, new Set([2])]),
    dates: [new Date(0), new Date(1_700_000_000_123), new Date(-1), new Date(8.64e15), new Date(Number.NaN)],
    bigints: [0n, -5n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 64n - 1n, 2n ** 64n, -(2n ** 200n), 12345678901234567890123456789n],
  };
  const out = roundTrip(value);
  t.deepEqual(out.set, value.set);
  t.deepEqual(out.dates.map((d) => d.getTime()), value.dates.map((d) => d.getTime()));
  t.deepEqual(out.bigints, value.bigints);
});

test('codec - typed arrays of every kind, DataView and ArrayBuffer round-trip', (t) => {
  const value = [
    new Int8Array([-128, 0, 127]),
    new Uint8Array([0, 255]),
    new Uint8ClampedArray([0, 255]),
    new Int16Array([-32768, 32767]),
    new Uint16Array([65535]),
    new Int32Array([-(2 ** 31), 2 ** 31 - 1]),
    new Uint32Array([2 ** 32 - 1]),
    new Float32Array([1.5, -0, Number.NaN]),
    new Float64Array([Math.PI, -Infinity]),
    new BigInt64Array([-(2n ** 63n)]),
    new BigUint64Array([2n ** 64n - 1n]),
    new Float32Array(0),
    new Float32Array(new ArrayBuffer(12), 4, 1), // a view into a larger buffer
  ];
  const out = roundTrip(value);
  t.is(out.length, value.length);
  value.forEach((array, i) => {
    t.is(out[i]!.constructor, array.constructor);
    t.deepEqual(out[i], array);
  });
  const view = new DataView(new Uint8Array([1, 2, 3]).buffer);
  const [dv, ab] = roundTrip([view, new Uint8Array([4, 5]).buffer]) as [DataView, ArrayBuffer];
  t.true(dv instanceof DataView);
  t.deepEqual([...new Uint8Array(dv.buffer, dv.byteOffset, dv.byteLength)], [1, 2, 3]);
  t.true(ab instanceof ArrayBuffer);
  t.deepEqual([...new Uint8Array(ab)], [4, 5]);
  t.deepEqual([...(roundTrip(Buffer.from('hi')) as Uint8Array)], [0x68, 0x69], 'a Node Buffer arrives as its bytes');
});

test('codec - class instances travel as their own enumerable properties, toJSON is honoured', (t) => {
  class Point {
    constructor(
      readonly x: number,
      readonly y: number,
    ) {}
    norm(): number {
      return Math.hypot(this.x, this.y);
    }
  }
  class Money {
    constructor(readonly cents: number) {}
    toJSON(): string {
      return `${this.cents / 100} EUR`;
    }
  }
  t.deepEqual(roundTrip([new Point(1, 2), new Money(250)]), [{ x: 1, y: 2 }, '2.5 EUR']);
});

test('codec - functions, symbols, promises and other unsendable values are refused', (t) => {
  const cases: [string, unknown, RegExp][] = [
    ['a function', function add() {}, /function 'add' cannot be sent.*remoteFunction/],
    ['a function in an array', [1, () => 1], /function/],
    ['a method as a property', { run() {} }, /property 'run'/],
    ['a function in a Map', new Map([['f', () => 1]]), /function/],
    ['a function in a Set', new Set([() => 1]), /function/],
    ['a function in a class instance', new (class { cb = (): void => {}; })(), /property 'cb'/],
    ['a symbol', Symbol('s'), /symbol \(Symbol\(s\)\)/],
    ['a symbol in an object', { s: Symbol.iterator }, /symbol/],
    ['a promise', { p: Promise.resolve(1) }, /await it/],
    ['a WeakMap', new WeakMap(), /WeakMap cannot be sent/],
    ['a RegExp', [/x/g], /RegExp cannot be sent/],
  ];
  for (const [name, value, message] of cases) {
    const error = t.throws(() => codec.encode(value), { instanceOf: SerializationError }, name);
    t.regex(error?.message ?? '', message, name);
  }
});

test('codec - encoding a disposed tensor or variable is a SerializationError', (t) => {
  noLeak(t, () => {
    const x = tf.ones([2]);
    x.dispose();
    t.throws(() => codec.encode({ x }), { instanceOf: SerializationError, message: /disposed tensor/ });
    const v = tf.tidy(() => tf.variable(tf.zeros([2])));
    v.dispose();
    t.throws(() => codec.encode([v]), { instanceOf: SerializationError, message: /disposed/ });
  });
});

test('codec - -0 arrives as 0 outside tensors, and as -0 inside them', (t) => {
  t.true(Object.is(roundTrip(-0), 0));
  noLeak(t, () => {
    const x = tf.tensor([-0]);
    const y = roundTrip(x);
    t.true(Object.is(y.dataSync()[0], -0));
    disposeAll([x, y]);
  });
});

// ---- the extension point ----

class Vec {
  constructor(
    readonly x: number,
    readonly y: number,
    readonly seenBy?: unknown,
  ) {}
}
interface TestContext {
  side: string;
  log: string[];
}
registerExtension<Vec, [number, number], TestContext>({
  type: 97,
  Class: Vec,
  write: (v, context) => {
    context?.log.push(`write ${v.x},${v.y}`);
    return [v.x, v.y];
  },
  read: ([x, y], context) => {
    context?.log.push(`read ${x},${y}`);
    return new Vec(x, y, context?.side);
  },
});

class Holder {
  constructor(readonly payload: { t: tf.Tensor; tags: Map<string, number> }) {}
}
registerExtension<Holder, Holder['payload'], undefined>({
  type: 98,
  Class: Holder,
  write: (h) => h.payload,
  read: (payload) => new Holder(payload),
});

test('codec - registered extensions round-trip anywhere and see the per-message context', (t) => {
  const sender: TestContext = { side: 'sender', log: [] };
  const receiver: TestContext = { side: 'receiver', log: [] };
  const bytes = codec.encode({ one: new Vec(1, 2), nested: [new Map([['v', new Vec(3, 4)]])], set: new Set([new Vec(5, 6)]) }, sender);
  const out = codec.decode(bytes, receiver) as { one: Vec; nested: Map<string, Vec>[]; set: Set<Vec> };
  t.true(out.one instanceof Vec);
  t.deepEqual([out.one.x, out.one.y, out.one.seenBy], [1, 2, 'receiver']);
  t.is(out.nested[0]!.get('v')!.x, 3);
  t.is([...out.set][0]!.y, 6);
  t.deepEqual(sender.log, ['write 1,2', 'write 3,4', 'write 5,6']);
  t.deepEqual(receiver.log, ['read 1,2', 'read 3,4', 'read 5,6']);
  t.is(roundTrip(new Vec(7, 8)).seenBy, undefined, 'no context: undefined');
});

test('codec - an extension payload may hold tensors and Maps, and its tensors are not disposed', (t) => {
  noLeak(t, () => {
    const x = tf.tensor([1, 2, 3]);
    const out = roundTrip([new Holder({ t: x, tags: new Map([['a', 1]]) })]);
    t.true(out[0] instanceof Holder);
    assertSameTensor(t, out[0]!.payload.t, x);
    t.false(out[0]!.payload.t.isDisposed);
    t.is(out[0]!.payload.tags.get('a'), 1);
    disposeAll([x, out[0]!.payload.t]);
  });
});

test('codec - registerExtension checks its type and refuses a taken one', (t) => {
  class Other {}
  const ext = { Class: Other, write: () => 0, read: () => new Other() };
  t.throws(() => registerExtension({ ...ext, type: 15 }), { instanceOf: InvalidArgumentError, message: /16 to 100/ });
  t.throws(() => registerExtension({ ...ext, type: 101 }), { instanceOf: InvalidArgumentError });
  t.throws(() => registerExtension({ ...ext, type: 66 }), { instanceOf: InvalidArgumentError, message: /big-integer/ });
  t.throws(() => registerExtension({ ...ext, type: 97 }), { instanceOf: InvalidArgumentError, message: /already taken by Vec/ });
  t.notThrows(() => registerExtension({ type: 97, Class: Vec, write: () => [0, 0], read: () => new Vec(0, 0) }), 'the same class again is a no-op');
});

test('codec - an extension whose write throws fails the encode with that error', (t) => {
  class Broken {}
  registerExtension({
    type: 96,
    Class: Broken,
    write: () => {
      throw new Error('cannot write this');
    },
    read: () => new Broken(),
  });
  t.throws(() => codec.encode([new Broken()]), { instanceOf: SerializationError, message: /cannot write this/ });
});

test('codec - limits are per codec', (t) => {
  const small = createCodec({ maxMessageBytes: 1024, maxDepth: 4 });
  t.deepEqual(small.limits, { maxMessageBytes: 1024, maxDepth: 4 });
  t.deepEqual(codec.limits, { maxMessageBytes: 2 ** 31 - 1, maxDepth: 256 });
  t.throws(() => createCodec({ maxDepth: -1 }), { instanceOf: InvalidArgumentError });
  t.throws(() => createCodec({ maxMessageBytes: Number.NaN }), { instanceOf: InvalidArgumentError });
});
