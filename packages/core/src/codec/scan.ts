/**
 * Checks an envelope's msgpack structure before anything is decoded from it,
 * in one pass without recursion: every length lies inside the envelope, the
 * envelope holds exactly one value, containers nest no deeper than allowed,
 * object keys are strings, and only the extension types of the wire format
 * appear. Hostile bytes (a 100,000-deep nesting, an array claiming four
 * billion elements, msgpackr's record or pointer extensions) are refused here,
 * so msgpackr's recursive reader only ever sees well-formed, shallow input.
 * @module
 */
import { SerializationError } from '../errors.js';
import { EXT_TYPED_ARRAY, EXT_UNDEFINED, ExtKind, extKinds } from './tags.js';

/** Element width of each typed-array code msgpackr writes (0x10 ArrayBuffer, 0x11 DataView: bytes). */
const TYPED_ARRAY_WIDTH: Record<number, number> = { 0: 1, 1: 1, 2: 1, 3: 2, 4: 2, 5: 4, 6: 4, 7: 4, 8: 8, 9: 8, 10: 8, 16: 1, 17: 1 };

/** For each first byte of a fixed-size value, how many bytes follow it; -1 for the others. */
const FIXED = new Int8Array(256).fill(-1);
FIXED.fill(0, 0x00, 0x80); // positive fixint
FIXED.fill(0, 0xe0, 0x100); // negative fixint
for (const [first, size] of [
  [0xc0, 0], [0xc2, 0], [0xc3, 0], // nil, false, true
  [0xcc, 1], [0xcd, 2], [0xce, 4], [0xcf, 8], // uint 8–64
  [0xd0, 1], [0xd1, 2], [0xd2, 4], [0xd3, 8], // int 8–64
  [0xca, 4], [0xcb, 8], // float 32, 64
] as const) {
  FIXED[first] = size;
}

function fail(message: string, at: number): never {
  throw new SerializationError(`malformed envelope at byte ${at}: ${message}`);
}

/**
 * Throws {@link SerializationError} unless `bytes[start, end)` is one
 * well-formed msgpack value whose arrays, maps and tags (each tag is a level
 * holding its payload) nest at most `maxLevels` deep.
 */
export function scanEnvelope(bytes: Uint8Array, start: number, end: number, maxLevels: number): void {
  // Enclosing containers, innermost last: values each still expects, times 2, plus 1 for a map.
  const stack: number[] = [];
  let pending = 1; // values still expected by the innermost container
  let inMap = false; // whether it is a map (its keys sit at even counts of `pending`)
  let pos = start;

  for (;;) {
    if (pending === 0) {
      if (stack.length === 0) break;
      const saved = stack.pop()!;
      pending = Math.floor(saved / 2);
      inMap = saved % 2 === 1;
      continue;
    }
    if (!inMap) {
      // Fast path for runs of numbers, the bulk of large arrays.
      let f: number;
      while (pending > 0 && pos < end && (f = FIXED[bytes[pos]!]!) >= 0) {
        pos += 1 + f;
        pending--;
      }
      if (pos > end) fail('number cut short (truncated?)', end);
      if (pending === 0) continue;
    }
    const isKey = inMap && pending % 2 === 0;
    pending--;
    if (pos >= end) fail('value expected (truncated?)', pos);
    const at = pos;
    const b = bytes[pos++]!;
    if (isKey && (b & 0xe0) !== 0xa0 && (b < 0xd9 || b > 0xdb)) fail('object keys must be strings', at);

    // The common cases first: numbers, short strings.
    const fixed = FIXED[b]!;
    if (fixed >= 0) {
      pos += fixed;
      if (pos > end) fail('number cut short (truncated?)', at);
      continue;
    }
    if ((b & 0xe0) === 0xa0) {
      pos += b & 0x1f; // fixstr
      if (pos > end) fail('string cut short (truncated?)', at);
      continue;
    }

    let count = -1; // elements of a container opened here
    let isMap = false;
    let skip = 0; // bytes of a string or bin
    let extLength = -1; // data bytes of an ext (after its type byte)
    if (b <= 0x8f) {
      count = (b & 0x0f) * 2;
      isMap = true;
    } else if (b <= 0x9f) {
      count = b & 0x0f;
    } else {
      if (b === 0xc1) fail('byte 0xc1 is not a msgpack value', at);
      const lengthBytes = b === 0xc4 || b === 0xd9 || b === 0xc7 ? 1 : b === 0xc5 || b === 0xda || b === 0xc8 || b === 0xdc || b === 0xde ? 2 : 4;
      let length = 0;
      if (b !== 0xd4 && (b < 0xd5 || b > 0xd8)) {
        if (lengthBytes > end - pos) fail('length cut short (truncated?)', at);
        for (let i = 0; i < lengthBytes; i++) length = length * 256 + bytes[pos++]!;
      }
      switch (b) {
        case 0xc4: // bin 8, 16, 32
        case 0xc5:
        case 0xc6:
        case 0xd9: // str 8, 16, 32
        case 0xda:
        case 0xdb:
          skip = length;
          break;
        case 0xc7: // ext 8, 16, 32
        case 0xc8:
        case 0xc9:
          extLength = length;
          break;
        case 0xd4: {
          // fixext 1: a tag whose payload is the next value, undefined, or one byte of data
          if (end - pos < 2) fail('extension cut short (truncated?)', at);
          const type = bytes[pos]!;
          const kind = extKinds[type];
          if (kind === ExtKind.Prefix || kind === ExtKind.Undefined) {
            if (bytes[pos + 1] !== 0) fail(`tag 0x${type.toString(16)} must have data byte 0`, at);
            pos += 2;
            if (type === EXT_UNDEFINED) continue;
            // A tag opens a level holding one value, its payload: msgpackr reads it recursively
            // too, so a long chain of tags must count against the depth like nested arrays.
            count = 1;
            break;
          }
          extLength = 1;
          break;
        }
        case 0xd5: // fixext 2, 4, 8, 16
        case 0xd6:
        case 0xd7:
        case 0xd8:
          extLength = 1 << (b - 0xd4);
          break;
        case 0xdc: // array 16, 32
        case 0xdd:
          count = length;
          break;
        case 0xde: // map 16, 32
        case 0xdf:
          count = length * 2;
          isMap = true;
          break;
      }
    }

    if (count >= 0) {
      if (stack.length + 1 > maxLevels) fail(`nesting deeper than ${maxLevels} levels`, at);
      // Every element takes at least one byte: this bounds what the reader will allocate.
      if (count > end - pos) fail(`container of ${isMap ? count / 2 : count} entries cannot fit in ${end - pos} bytes (truncated?)`, at);
      if (count > 0) {
        stack.push(pending * 2 + (inMap ? 1 : 0));
        pending = count;
        inMap = isMap;
      }
    } else if (extLength >= 0) {
      if (extLength + 1 > end - pos) fail('extension cut short (truncated?)', at);
      const type = bytes[pos]!;
      if (extKinds[type] !== ExtKind.Data) fail(`extension type 0x${type.toString(16)} is not part of the wire format`, at);
      if (type === EXT_TYPED_ARRAY) {
        const width = extLength > 0 ? TYPED_ARRAY_WIDTH[bytes[pos + 1]!] : undefined;
        if (width === undefined || (extLength - 1) % width !== 0) fail('malformed typed array', at);
      }
      pos += 1 + extLength;
    } else {
      if (skip > end - pos) fail(`${b >= 0xd9 ? 'string' : 'bytes'} of ${skip} bytes cut short (truncated?)`, at);
      pos += skip;
    }
  }
  if (pos !== end) fail(`${end - pos} bytes left after the value`, pos);
}
