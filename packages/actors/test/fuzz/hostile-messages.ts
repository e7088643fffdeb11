/**
 * Generators of hostile input for the fuzz tests: a seeded random source,
 * mutations of captured well-formed messages, structured messages of every
 * protocol with hostile field values, and data-port frames.
 */
import { defaultCodec } from '@tensorbus/core';
import { seededRandom } from '@tensorbus/nats-transport/testing';

/** A seeded random source: the same seed gives the same run. */
export class Random {
  /** A float in [0, 1). */
  readonly next: () => number;

  constructor(seed: number) {
    this.next = seededRandom(seed);
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** One element of `items`. */
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  /** `n` random bytes. */
  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
}

/** Strings a peer might send where a name, id or subject is expected. */
const HOSTILE_STRINGS = [
  '',
  'p0',
  'p1',
  'x'.repeat(5_000),
  'a b',
  'p1\r\nUNSUB 1\r\n',
  'p1\r\nPUB tb.call.p1 5\r\nhello\r\n',
  'tb.call.p1',
  '>',
  '*',
  '_INBOX.>',
  '..',
  'a.b.',
  '\u0000',
  '../../etc/passwd',
  '__proto__',
  'constructor',
  'valueOf',
  'toString',
  'hasOwnProperty',
  '_private',
  'tf.variable',
  'tf.print',
  'tf.dispose',
  'tf.setBackend',
  'tb.rref.create',
  'tb.rref.fetch',
  'tb.rref.call',
  'tb.autograd.grads',
  'tb.autograd.release',
  'ctx/999',
  '0/0',
  'p1/1',
];

/** Numbers a peer might send where a count, id, size or time is expected. */
const HOSTILE_NUMBERS = [0, -1, 1, 2 ** 31, 2 ** 32 + 1, 2 ** 50, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 1e308, Number.NaN, Infinity, -Infinity, 0.5];

/** Control and membership kinds every worker handles. */
export const CONTROL_KINDS = ['hello', 'sync', 'hb', 'bye', 'here', 'query', 'ping', 'sdstatus', 'sdasked', 'scredit', 'scancel', 'rref.fork', 'rref.child', 'rref.delete', 'nonsense'];

/** Any value a hostile peer might put in a field. */
export function hostileValue(random: Random, depth = 0): unknown {
  switch (random.int(depth > 2 ? 4 : 8)) {
    case 0:
      return random.pick(HOSTILE_STRINGS);
    case 1:
      return random.pick(HOSTILE_NUMBERS);
    case 2:
      return random.pick([null, undefined, true, false]);
    case 3:
      return random.bytes(random.int(64));
    case 4:
      return Array.from({ length: random.int(5) }, () => hostileValue(random, depth + 1));
    case 5:
      return Object.fromEntries(Array.from({ length: random.int(5) }, () => [random.pick(HOSTILE_STRINGS), hostileValue(random, depth + 1)]));
    case 6: {
      // Deep nesting, to look for recursion limits.
      let value: unknown = 1;
      for (let i = 0; i < 2_000; i++) value = [value];
      return value;
    }
    default:
      return random.pick(HOSTILE_STRINGS) + random.pick(HOSTILE_STRINGS);
  }
}

/** A control or membership message of a real kind with hostile fields (may fail to encode: then raw bytes). */
export function hostileControl(random: Random): Uint8Array {
  const message: Record<string, unknown> = { k: random.pick(CONTROL_KINDS) };
  for (const field of ['n', 'id', 'inst', 't', 'reply', 'rrefId', 'forkId', 'holder', 'parent', 'sid', 'credit', 'from']) {
    if (random.next() < 0.6) message[field] = hostileValue(random);
  }
  return encodeOrBytes(random, message);
}

/** A call or stream request with hostile function names, arguments, meta and stream opening. */
export function hostileCall(random: Random): Uint8Array {
  const kind = random.pick([0, 1, 2, -1]);
  const meta = random.next() < 0.8 ? { from: random.pick(HOSTILE_STRINGS), ag: hostileValue(random) } : hostileValue(random);
  const open = { id: random.pick(HOSTILE_NUMBERS), subject: random.pick(HOSTILE_STRINGS), credit: random.pick(HOSTILE_NUMBERS) };
  const args = Array.from({ length: random.int(4) }, () => hostileValue(random));
  return encodeOrBytes(random, [kind, random.pick(HOSTILE_STRINGS), args, meta, open]);
}

/** `sample` damaged: bytes flipped, cut short, extended, or spliced with `other`. */
export function mutate(random: Random, sample: Uint8Array, other: Uint8Array): Uint8Array {
  const out = Uint8Array.from(sample);
  switch (random.int(5)) {
    case 0:
      for (let i = 0, n = 1 + random.int(8); i < n && out.length > 0; i++) out[random.int(out.length)] = random.int(256);
      return out;
    case 1:
      return out.subarray(0, random.int(out.length + 1));
    case 2: {
      const grown = new Uint8Array(out.length + 1 + random.int(64));
      grown.set(out);
      grown.set(random.bytes(grown.length - out.length), out.length);
      return grown;
    }
    case 3: {
      const cut = random.int(out.length + 1);
      const from = random.int(other.length + 1);
      const spliced = new Uint8Array(cut + other.length - from);
      spliced.set(out.subarray(0, cut));
      spliced.set(other.subarray(from), cut);
      return spliced;
    }
    default:
      // Keep the frame's magic, lie about the envelope's length.
      if (out.length >= 8) new DataView(out.buffer, out.byteOffset).setUint32(4, random.pick([0, 1, 2 ** 31, 0xffffffff]), true);
      return out;
  }
}

/** A data-port frame: real op codes with random ids, tokens, subjects and sizes, or junk. */
export function hostileFrame(random: Random, knownToken: Buffer | undefined, knownSubject: string): Buffer {
  const token = knownToken && random.next() < 0.3 ? knownToken : Buffer.from(random.bytes(16));
  const subject = Buffer.from(random.next() < 0.5 ? knownSubject : random.pick(HOSTILE_STRINGS));
  const size = random.pick([0, 1, 8, 1_000, 2 ** 20, 2 ** 31 - 1, 2 ** 32, 2 ** 50]);
  const id = random.int(2 ** 32);
  const sizeBytes = () => {
    const b = Buffer.alloc(8);
    b.writeUInt32BE(Math.floor(size / 2 ** 32) >>> 0, 0);
    b.writeUInt32BE(size >>> 0, 4);
    return b;
  };
  const head = (op: number) => {
    const b = Buffer.alloc(5);
    b[0] = op;
    b.writeUInt32BE(id, 1);
    return b;
  };
  const subjectField = () => {
    const length = Buffer.alloc(2);
    length.writeUInt16BE(random.next() < 0.9 ? subject.length : random.int(65_536));
    return Buffer.concat([length, subject]);
  };
  const body = Buffer.from(random.bytes(Math.min(size, random.int(256))));
  switch (random.int(8)) {
    case 0:
      return Buffer.concat([head(0x01), token]);
    case 1:
      return Buffer.concat([head(0x02), token, subjectField(), sizeBytes(), body]);
    case 2: {
      const offer = Buffer.from(`h 127.0.0.1:${1 + random.int(65_535)} ${Buffer.from(random.bytes(16)).toString('hex')}`);
      const length = Buffer.alloc(2);
      length.writeUInt16BE(offer.length);
      return Buffer.concat([head(0x04), token, subjectField(), length, offer, sizeBytes()]);
    }
    case 3:
      return Buffer.concat([head(0x05), token, subjectField(), Buffer.from(random.bytes(32))]);
    case 4:
      return Buffer.concat([Buffer.from([0x06]), Buffer.from(random.bytes(32))]);
    case 5:
      return Buffer.concat([head(0x03), Buffer.from([random.int(256)]), sizeBytes()]);
    case 6:
      return Buffer.from(random.bytes(1 + random.int(512)));
    default:
      // A valid header cut short: the connection then waits for bytes that never come.
      return Buffer.concat([head(0x02), token, subjectField()]).subarray(0, 1 + random.int(20));
  }
}

function encodeOrBytes(random: Random, value: unknown): Uint8Array {
  try {
    return defaultCodec.encode(value);
  } catch {
    return random.bytes(1 + random.int(64));
  }
}
