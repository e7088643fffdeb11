import test, { type ExecutionContext } from 'ava';
import { Packr } from 'msgpackr';
import { createCodec, defaultCodec, registerExtension, RpcTimeoutError, SerializationError, tf } from '../src/index.js';
import { MapTag, TensorTag } from '../src/codec/tags.js';

// Every test here is synchronous, so tf.memory() counts are not disturbed by another test.

const codec = defaultCodec;
const packr = new Packr({ useRecords: false, moreTypes: true, variableMapSize: true });

/** A seeded PRNG (mulberry32), so a failure can be replayed. */
function rng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function concat(...parts: (number | number[] | Uint8Array)[]): Uint8Array {
  const flat: number[] = [];
  for (const part of parts) {
    if (typeof part === 'number') flat.push(part);
    else flat.push(...part);
  }
  return new Uint8Array(flat);
}

/** A frame around `envelope` (raw bytes, or a value packed by msgpackr), with `data` as its data section. */
function frameOf(envelope: Uint8Array | unknown, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  const env = envelope instanceof Uint8Array ? envelope : packr.pack(envelope);
  const dataStart = Math.ceil((8 + env.byteLength) / 8) * 8;
  const frame = new Uint8Array(dataStart + data.byteLength);
  frame.set([0x54, 0x42, 1, 0]);
  new DataView(frame.buffer).setUint32(4, env.byteLength, true);
  frame.set(env, 8);
  frame.set(data, dataStart);
  return frame;
}

function disposeAll(value: unknown): void {
  if (value instanceof tf.Tensor) value.dispose();
  else if (Array.isArray(value)) value.forEach(disposeAll);
  else if (value instanceof Map) value.forEach((v, k) => (disposeAll(k), disposeAll(v)));
  else if (value instanceof Set) value.forEach(disposeAll);
  else if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) Object.values(value).forEach(disposeAll);
  else if (value instanceof Vec) disposeAll(value.items);
}

/** Decodes `bytes`; a failure must be a SerializationError; a success is disposed. Returns whether it decoded. */
function tryDecode(t: ExecutionContext, bytes: Uint8Array, what: string): boolean {
  try {
    disposeAll(codec.decode(bytes));
    return true;
  } catch (error) {
    if (!(error instanceof SerializationError)) t.fail(`${what}: threw ${String(error)}, not a SerializationError`);
    return false;
  }
}

function refused(t: ExecutionContext, bytes: Uint8Array, message: RegExp, what = message.source): void {
  t.throws(() => codec.decode(bytes), { instanceOf: SerializationError, message }, what);
}

function noLeak(t: ExecutionContext, fn: () => void): void {
  const before = tf.memory().numTensors;
  fn();
  t.is(tf.memory().numTensors, before, 'tensors leaked');
}

class Vec {
  constructor(readonly items: unknown[]) {}
}
registerExtension<Vec, unknown[], undefined>({
  type: 97,
  Class: Vec,
  write: (v) => v.items,
  read: (items) => {
    if (!Array.isArray(items)) throw new TypeError('Vec payload must be an array');
    return new Vec(items);
  },
});

/** Frames holding something of everything, to mutate. */
function sampleFrames(): Uint8Array[] {
  const tensors = [
    tf.tensor([[1.5, -2], [3, 4]]),
    tf.tensor([1, 2, 3], [3], 'int32'),
    tf.tensor([true, false, true], [3], 'bool'),
    tf.tensor(['a', 'bc'], [2], 'string'),
    tf.zeros([0, 3]),
    tf.scalar(7),
  ];
  const frames = [
    codec.encode(['call', 12, 'math.add', [tensors[0], tensors[1]], { timeoutMs: 5000 }]),
    codec.encode({ m: new Map<unknown, unknown>([[1, tensors[2]], ['k', [tensors[3]]]]), s: new Set([tensors[4], 'x']) }),
    codec.encode([new RpcTimeoutError('late', { cause: new Error('inner') }), new Date(1_700_000_000_123), 2n ** 70n, -3n]),
    codec.encode([new Float64Array([1, 2]), new Int16Array([3]), new Vec([tensors[5], new Map([[2, 3]])]), undefined, null, true]),
    codec.encode([1, 2, 3, 'hello']),
  ];
  disposeAll(tensors);
  return frames;
}

test('codec - random garbage is a SerializationError', (t) => {
  const random = rng(1);
  noLeak(t, () => {
    for (let i = 0; i < 3000; i++) {
      const length = Math.floor(random() * 200);
      const bytes = new Uint8Array(length).map(() => Math.floor(random() * 256));
      if (i % 2 === 0 && length >= 8) {
        // A valid header, so the garbage reaches the envelope scanner and the reader.
        bytes.set([0x54, 0x42, 1, 0]);
        new DataView(bytes.buffer).setUint32(4, Math.floor(random() * (length - 7)), true);
      }
      tryDecode(t, bytes, `garbage #${i}`);
    }
  });
});

test('codec - thousands of random mutations of valid frames never crash nor leak', (t) => {
  const random = rng(2);
  const frames = sampleFrames();
  let decoded = 0;
  noLeak(t, () => {
    for (let i = 0; i < 6000; i++) {
      let bytes: Uint8Array = frames[i % frames.length]!.slice();
      for (let m = 1 + Math.floor(random() * 3); m > 0; m--) {
        const at = Math.floor(random() * bytes.length);
        switch (Math.floor(random() * 5)) {
          case 0: // replace a byte
            bytes[at] = Math.floor(random() * 256);
            break;
          case 1: // flip a bit
            bytes[at] ^= 1 << Math.floor(random() * 8);
            break;
          case 2: // small numbers and lengths are where structure lives
            bytes[at] = [0, 1, 0x7f, 0x80, 0x90, 0xc0, 0xd4, 0xdc, 0xff][Math.floor(random() * 9)]!;
            break;
          case 3: // drop a byte
            bytes = concat(bytes.subarray(0, at), bytes.subarray(at + 1));
            break;
          default: // insert a byte
            bytes = concat(bytes.subarray(0, at), Math.floor(random() * 256), bytes.subarray(at));
        }
      }
      if (tryDecode(t, bytes, `mutation #${i}`)) decoded++;
    }
  });
  t.log(`${decoded} of 6000 mutated frames still decoded`);
  for (const frame of frames) t.true(tryDecode(t, frame, 'original'), 'the originals still decode');
});

test('codec - every truncation of a frame is a SerializationError', (t) => {
  const x = tf.tensor([1, 2, 3]);
  const frame = codec.encode({ x, m: new Map([[1, 'a']]), s: 'text' });
  x.dispose();
  noLeak(t, () => {
    for (let length = 0; length < frame.byteLength; length++) {
      t.throws(() => codec.decode(frame.subarray(0, length)), { instanceOf: SerializationError }, `truncated to ${length}`);
    }
  });
  t.notThrows(() => disposeAll(codec.decode(frame)));
});

test('codec - bad magic, version and flags are refused', (t) => {
  const frame = codec.encode([1]);
  const patched = (at: number, byte: number): Uint8Array => {
    const copy = frame.slice();
    copy[at] = byte;
    return copy;
  };
  refused(t, patched(0, 0x55), /bad magic/);
  refused(t, patched(1, 0x00), /bad magic/);
  refused(t, patched(2, 2), /unsupported frame version 2/);
  refused(t, patched(3, 1), /unknown frame flags/);
  refused(t, patched(4, 0xff), /overruns/);
  refused(t, new Uint8Array([0x54, 0x42, 1, 0, 0, 0, 0, 0]), /empty envelope/);
  refused(t, new Uint8Array([0x54, 0x42]), /shorter than the 8-byte header/);
  refused(t, new Uint8Array(0), /shorter/);
});

test('codec - only a Uint8Array is decoded', (t) => {
  for (const value of ['TB', null, new ArrayBuffer(16), [0x54, 0x42]]) {
    t.throws(() => codec.decode(value as unknown as Uint8Array), { instanceOf: SerializationError, message: /Uint8Array/ });
  }
});

test('codec - tensor descriptors pointing outside the frame are refused', (t) => {
  noLeak(t, () => {
    const data = new Uint8Array(8);
    refused(t, frameOf(new TensorTag(['float32', [4], 0, 16]), data), /lies outside the 8-byte|outside the/);
    refused(t, frameOf(new TensorTag(['float32', [2], 8, 8]), data), /outside/);
    refused(t, frameOf(new TensorTag(['float32', [2], 2 ** 40, 8]), data), /outside/);
    refused(t, frameOf(new TensorTag(['int32', [1], 0, 4])), /outside/, 'no data section at all');
  });
});

test('codec - wrong byte lengths, misaligned offsets and bad dtypes or shapes are refused', (t) => {
  const data = new Uint8Array(64);
  const bad: [unknown[], RegExp][] = [
    [['float32', [2], 0, 12], /needs 8 bytes, the frame gives 12/],
    [['float32', [3], 0, 8], /needs 12 bytes/],
    [['bool', [2], 0, 8], /needs 2 bytes/],
    [['complex64', [2], 0, 8], /needs 16 bytes/],
    [['float32', [2], 4, 8], /multiple of 8/],
    [['float32', [2], -8, 8], /malformed tensor descriptor/],
    [['float32', [2], 0.5, 8], /malformed tensor descriptor/],
    [['float32', [2], '0', 8], /malformed tensor descriptor/],
    [['float32', [2], 0], /malformed tensor descriptor/],
    [['float32', [2], 0, 8, 9], /malformed tensor descriptor/],
    [['float64', [1], 0, 8], /unknown tensor dtype 'float64'/],
    [['constructor', [1], 0, 8], /unknown tensor dtype/],
    [['float32', [-1], 0, 0], /invalid tensor dimension -1/],
    [['float32', [1.5], 0, 4], /invalid tensor dimension 1.5/],
    [['float32', ['2'], 0, 8], /invalid tensor dimension/],
    [['float32', 2, 0, 8], /shape must be an array/],
    [['float32', [2 ** 31], 0, 0], /invalid tensor dimension/],
    [['string', [2], [Buffer.from('a')]], /needs an array of 2 values/],
    [['string', [1], [5]], /byte strings/],
    [['string', [1], 'a'], /needs an array/],
    [['string', [1]], /malformed string tensor/],
    [[1, [1], 0, 4], /malformed tensor descriptor/],
  ];
  noLeak(t, () => {
    for (const [descriptor, message] of bad) refused(t, frameOf([new TensorTag(descriptor)], data), message, JSON.stringify(descriptor));
    refused(t, frameOf(new TensorTag('float32')), /malformed tensor descriptor/);
  });
});

test('codec - a decode that fails after making tensors disposes them', (t) => {
  const data = new Uint8Array(64);
  const good = new TensorTag(['float32', [4], 0, 16]);
  noLeak(t, () => {
    refused(t, frameOf([good, new TensorTag(['int32', [2], 16, 8]), new TensorTag(['float32', [4], 0, 8])], data), /needs 16 bytes/);
    refused(t, frameOf({ a: good, b: new MapTag([1, good]), c: new TensorTag(['float32', [4], 4096, 16]) }, data), /outside/);
    refused(t, frameOf([new Set([good]), new MapTag([good])], data), /malformed Map/);
    // An extension that throws on its payload, after the payload's tensor was made:
    const vecTag = concat(0xd4, 97, 0, packr.pack(good));
    refused(t, frameOf(concat(0x92, packr.pack(good), vecTag), data), /Vec payload must be an array/);
  });
});

test('codec - tensors dropped by a repeated key are disposed', (t) => {
  const data = new Uint8Array(16);
  const tensor = packr.pack(new TensorTag(['float32', [4], 0, 16]));
  noLeak(t, () => {
    // { a: tensor, a: tensor }: the reader keeps the second.
    const object = codec.decode(frameOf(concat(0x82, 0xa1, 0x61, tensor, 0xa1, 0x61, tensor), data)) as { a: tf.Tensor };
    t.deepEqual([...object.a.dataSync()], [0, 0, 0, 0]);
    object.a.dispose();
    const map = codec.decode(frameOf(new MapTag(['k', new TensorTag(['float32', [4], 0, 16]), 'k', 1]), data)) as Map<string, unknown>;
    t.is(map.get('k'), 1);
  });
});

test('codec - depth bombs 100,000 levels deep are refused without overflowing the stack', (t) => {
  const n = 100_000;
  const repeat = (unit: number[], tail: number[]): Uint8Array => {
    const out = new Uint8Array(unit.length * n + tail.length);
    for (let i = 0; i < n; i++) out.set(unit, i * unit.length);
    out.set(tail, unit.length * n);
    return out;
  };
  const bombs: [string, Uint8Array][] = [
    ['arrays', repeat([0x91], [0x01])],
    ['array16s', repeat([0xdc, 0x00, 0x01], [0x01])],
    ['maps', repeat([0x81, 0xa1, 0x61], [0x01])],
    ['Sets', repeat([0xd4, 0x73, 0x00, 0x91], [0x01])],
    ['Maps', repeat([0xd4, 0x02, 0x00, 0x92, 0x01], [0x01])],
    ['extension tags', repeat([0xd4, 97, 0x00], [0x90])],
    ['error tags', repeat([0xd4, 0x03, 0x00], [0x80])],
  ];
  for (const [name, envelope] of bombs) {
    refused(t, frameOf(envelope), /nesting deeper than 515 levels/, name);
  }
  t.deepEqual(codec.decode(codec.encode([[1]])), [[1]], 'the codec still works');
});

test('codec - values nested deeper than maxDepth, and cyclic values, are refused on encode', (t) => {
  const shallow = createCodec({ maxDepth: 3 });
  t.notThrows(() => shallow.encode([[[[1]]]]), 'containers at depths 0 to 3');
  const tooDeep: [string, unknown][] = [
    ['arrays', [[[[[1]]]]]],
    ['objects', { a: { b: { c: { d: { e: 1 } } } } }],
    ['Maps', new Map([[1, new Map([[1, new Map([[1, new Map([[1, new Map()]])]])]])]])],
    ['Sets', new Set([new Set([new Set([new Set([new Set()])])])])],
    ['an extension payload', [[[new Vec([])]]]],
    ['a tensor', [[[[tf.scalar(1)]]]]],
  ];
  for (const [name, value] of tooDeep) {
    t.throws(() => shallow.encode(value), { instanceOf: SerializationError, message: /nests deeper than 3 levels/ }, name);
  }
  const object: Record<string, unknown> = { a: 1 };
  object.self = object;
  const array: unknown[] = [1];
  array.push(array);
  const map = new Map<string, unknown>();
  map.set('me', map);
  const set = new Set<unknown>();
  set.add(set);
  const ping: Record<string, unknown> = {};
  const pong = { ping };
  ping.pong = pong;
  for (const [name, value] of Object.entries({ object, array, map, set, ping })) {
    t.throws(() => codec.encode(value), { instanceOf: SerializationError, message: /is it cyclic/ }, name);
  }
  disposeAll(tooDeep);
});

test('codec - what encode accepts at maxDepth, decode accepts', (t) => {
  const shallow = createCodec({ maxDepth: 3 });
  noLeak(t, () => {
    const x = tf.tensor([1, 2]);
    const deepest = new RpcTimeoutError('outer', { cause: new Error('middle', { cause: new Error('inner') }) });
    // Each at the deepest level maxDepth 3 allows: tagged containers all the way down.
    const values = [
      new Set([new Map([[1, new Set([x])]])]), // a tensor at depth 3
      new Map([[new Vec([[1]]), 1]]), // an extension whose payload ends at depth 3
      [[[deepest]]], // an error at depth 3, with its causes
    ];
    const out = values.map((value) => shallow.decode(shallow.encode(value)));
    const inner = [...([...(out[0] as Set<Map<number, Set<tf.Tensor>>>)][0]!.get(1)!)][0]!;
    t.deepEqual([...inner.dataSync()], [1, 2]);
    t.true([...(out[1] as Map<Vec, number>).keys()][0] instanceof Vec);
    const error = (out[2] as Error[][][])[0]![0]![0]!;
    t.true(error instanceof RpcTimeoutError);
    t.is((error.cause as Error).message, 'middle');
    t.is((error.cause as Error).cause, undefined, 'the cause chain is cut to fit the depth, not refused');
    disposeAll([x, out]);
  });
});

test('codec - maxMessageBytes is enforced on encode and decode', (t) => {
  const small = createCodec({ maxMessageBytes: 1024 });
  noLeak(t, () => {
    const x = tf.zeros([1024]);
    t.throws(() => small.encode([x]), { instanceOf: SerializationError, message: /exceeds the limit of 1024 bytes/ });
    x.dispose();
  });
  t.throws(() => small.encode({ s: 'x'.repeat(2000) }), { instanceOf: SerializationError, message: /exceeds the limit/ });
  const big = codec.encode({ s: 'x'.repeat(2000) });
  t.throws(() => small.decode(big), { instanceOf: SerializationError, message: /exceeds the limit of 1024 bytes/ });
  t.notThrows(() => small.decode(codec.encode({ s: 'x'.repeat(900) })));
});

test('codec - msgpackr extensions outside the wire format are refused', (t) => {
  const cases: [string, Uint8Array, RegExp][] = [
    ['a record definition', concat(0xd4, 0x72, 0x40, 0x91, 0xa1, 0x61, 0x01), /extension type 0x72/],
    ['a structured-clone pointer', concat(0xd6, 0x70, 0, 0, 0, 1), /extension type 0x70/],
    ['a structured-clone id', concat(0xd6, 0x69, 0, 0, 0, 1, 0x90), /extension type 0x69/],
    ['a RegExp', concat(0xd4, 0x78, 0x00, 0x92, 0xa1, 0x61, 0xa0), /extension type 0x78/],
    ['msgpackr error', concat(0xd4, 0x65, 0x00, 0x93, 0xa5, ...Buffer.from('Error'), 0xa0, 0xc0), /extension type 0x65/],
    ['bundled strings', concat(0xd6, 0x62, 0, 0, 0, 0), /extension type 0x62/],
    ['an unknown type', concat(0xc7, 0x01, 0x50, 0x00), /extension type 0x50/],
    ['0xc1', concat(0xc1), /0xc1 is not a msgpack value/],
    ['a typed array of an unknown kind', concat(0xc7, 0x02, 0x74, 0x20, 0x00), /malformed typed array/],
    ['a typed array with a partial element', concat(0xc7, 0x04, 0x74, 0x07, 0, 0, 0), /malformed typed array/],
    ['a tag with a data byte', concat(0xd4, 0x02, 0x01, 0x90), /must have data byte 0/],
    ['a tag in a data extension', concat(0xd5, 0x01, 0x00, 0x00), /extension type 0x1 /],
  ];
  for (const [name, envelope, message] of cases) refused(t, frameOf(envelope), message, name);
});

test('codec - object keys must be strings, and containers must fit in the envelope', (t) => {
  const tensorKey = concat(0x81, packr.pack(new TensorTag(['float32', [0], 0, 0])), 0x01);
  noLeak(t, () => {
    refused(t, frameOf(concat(0x81, 0x01, 0x01)), /keys must be strings/);
    refused(t, frameOf(tensorKey), /keys must be strings/);
    refused(t, frameOf(concat(0x81, 0x90, 0x01)), /keys must be strings/);
  });
  refused(t, frameOf(concat(0xdd, 0xff, 0xff, 0xff, 0xff)), /cannot fit/);
  refused(t, frameOf(concat(0xdf, 0xff, 0xff, 0xff, 0xff)), /cannot fit/);
  refused(t, frameOf(concat(0xc6, 0xff, 0xff, 0xff, 0xff)), /cut short/);
  refused(t, frameOf(concat(0xdb, 0x00, 0x00, 0x01, 0x00, 0x61)), /cut short/);
  refused(t, frameOf(concat(0xc9, 0xff, 0xff, 0xff, 0xff, 0x74)), /cut short/);
  refused(t, frameOf(concat(0x92, 0x01)), /truncated/);
  refused(t, frameOf(concat(0x01, 0x02)), /1 bytes left after the value/);
});
