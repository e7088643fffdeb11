/**
 * XML-RPC values in: a `<value>` element to the JavaScript value a worker
 * gets. int, i4, i8 and double are numbers, boolean a boolean, string (or
 * untyped text) a string, base64 a Uint8Array, dateTime.iso8601 a Date,
 * array an array, struct a plain object, nil null. A struct that is exactly
 * `{dtype, shape, data}` with `data` base64 is a tensor (little-endian
 * values). Every value counts against the request's limits before anything
 * is made for it.
 * @module
 */
import { InvalidArgumentError, type tf } from '@tensorbus/core';
import { GatewayError } from './errors.js';
import { elementBytes, tensorFromBytes } from '@tensorbus/core/internal';
import type { GatewayLimits } from './limits.js';
import { elements, textOf, type XmlElement, type XmlNode } from './xml-tree.js';

/** What one request has used of its limits, and the tensors made for it (the caller disposes them). */
export class RequestBudget {
  values = 0;
  tensorBytes = 0;
  readonly tensors: tf.Tensor[] = [];

  constructor(readonly limits: GatewayLimits) {}

  /** Counts one more value; throws GATEWAY_LIMIT_EXCEEDED past `maxValues`. */
  count(): void {
    if (++this.values > this.limits.maxValues) {
      throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request holds more than ${this.limits.maxValues} values`);
    }
  }

  /** Checks the nesting depth. */
  enter(depth: number): void {
    if (depth > this.limits.maxDepth) throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request nests deeper than ${this.limits.maxDepth} levels`);
  }

  /** Counts `bytes` of tensor data; throws GATEWAY_LIMIT_EXCEEDED past `maxTensorBytes`. */
  tensorData(bytes: number): void {
    this.tensorBytes += bytes;
    if (this.tensorBytes > this.limits.maxTensorBytes) {
      throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request carries more than ${this.limits.maxTensorBytes} bytes of tensors`);
    }
  }
}

/** The dtypes that cross the gateway as tensors. */
const TENSOR_DTYPES: ReadonlySet<string> = new Set(['float32', 'int32', 'bool']);

const INT = /^[+-]?[0-9]{1,20}$/;
/** One way to match each input (digits, then an optional fraction), so a failed match backtracks linearly, never quadratically. */
const DOUBLE = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?$/;
const SPECIAL_DOUBLES: Record<string, number> = { nan: NaN, inf: Infinity, '+inf': Infinity, '-inf': -Infinity, infinity: Infinity, '-infinity': -Infinity };
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** ISO 8601 as XML-RPC writes it: 19980717T14:08:55, with optional dashes, fraction and zone. */
const DATE_TIME = /^(\d{4})-?(\d{2})-?(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|[+-]\d{2}:?\d{2})?$/;

function bad(message: string): never {
  throw new InvalidArgumentError(message);
}

/** The only element inside `nodes` (whitespace around it allowed), undefined when there is none. */
function onlyElement(nodes: readonly XmlNode[], where: string): XmlElement | undefined {
  const found = elements(nodes);
  if (found.length > 1) bad(`${where} holds ${found.length} elements, expected one`);
  if (found.length === 1 && textOf(nodes, false).trim() !== '') bad(`${where} mixes text and an element`);
  return found[0];
}

/** Reads `<value>`'s children at `depth`. */
export function readValue(children: readonly XmlNode[], budget: RequestBudget, depth: number): unknown {
  budget.count();
  budget.enter(depth);
  const typed = onlyElement(children, '<value>');
  if (typed === undefined) return textOf(children); // untyped: a string
  const inner = typed.children;
  // Scalars hold text only: an element inside one is not XML-RPC.
  if (typed.tag !== 'array' && typed.tag !== 'struct' && elements(inner).length > 0) bad(`<${typed.tag.slice(0, 40)}> holds an element`);
  switch (typed.tag) {
    case 'string':
      return textOf(inner);
    case 'int':
    case 'i4':
    case 'i8':
      return readInt(textOf(inner).trim(), typed.tag);
    case 'double':
      return readDouble(textOf(inner).trim());
    case 'boolean': {
      const text = textOf(inner).trim();
      if (text === '1' || text === 'true') return true;
      if (text === '0' || text === 'false') return false;
      return bad(`<boolean> must be 0 or 1, got ${JSON.stringify(text.slice(0, 20))}`);
    }
    case 'base64':
      return readBase64(textOf(inner));
    case 'dateTime.iso8601':
      return readDate(textOf(inner).trim());
    case 'nil':
    case 'ex:nil':
      if (textOf(inner).trim() !== '') bad('<nil/> must be empty');
      return null;
    case 'array':
      return readArray(inner, budget, depth);
    case 'struct':
      return readStruct(inner, budget, depth);
    default:
      return bad(`unknown XML-RPC type <${typed.tag.slice(0, 40)}>`);
  }
}

function readInt(text: string, tag: string): number {
  if (!INT.test(text)) bad(`<${tag}> holds no integer: ${JSON.stringify(text.slice(0, 30))}`);
  const n = Number(text);
  const max = tag === 'i8' ? Number.MAX_SAFE_INTEGER : 2 ** 31 - 1;
  const min = tag === 'i8' ? -Number.MAX_SAFE_INTEGER : -(2 ** 31);
  if (n > max || n < min) bad(`<${tag}> ${text} is out of range`);
  return n;
}

function readDouble(text: string): number {
  const special = SPECIAL_DOUBLES[text.toLowerCase()];
  if (special !== undefined) return special;
  if (!DOUBLE.test(text)) bad(`<double> holds no number: ${JSON.stringify(text.slice(0, 30))}`);
  return Number(text);
}

function readBase64(text: string): Uint8Array {
  const compact = text.replace(/[\s]+/g, '');
  if (!BASE64.test(compact) || compact.length % 4 === 1) bad('<base64> is not base64');
  return new Uint8Array(Buffer.from(compact, 'base64'));
}

function readDate(text: string): Date {
  const m = DATE_TIME.exec(text);
  if (!m) return bad(`<dateTime.iso8601> ${JSON.stringify(text.slice(0, 40))} is not an ISO 8601 date and time`);
  const zone = m[8] === undefined ? 'Z' : m[8].length === 5 ? `${m[8].slice(0, 3)}:${m[8].slice(3)}` : m[8];
  const date = new Date(`${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${m[7] ?? ''}${zone}`);
  if (Number.isNaN(date.getTime())) bad(`<dateTime.iso8601> ${text} is not a valid date`);
  return date;
}

function readArray(children: readonly XmlNode[], budget: RequestBudget, depth: number): unknown[] {
  const data = onlyElement(children, '<array>');
  if (data?.tag !== 'data') return bad('<array> must hold one <data>');
  const out: unknown[] = [];
  if (textOf(data.children, false).trim() !== '') bad('<data> holds text outside <value>s');
  for (const item of elements(data.children)) {
    if (item.tag !== 'value') bad(`<data> holds <${item.tag.slice(0, 40)}>, expected <value>`);
    out.push(readValue(item.children, budget, depth + 1));
  }
  return out;
}

function readStruct(children: readonly XmlNode[], budget: RequestBudget, depth: number): unknown {
  if (textOf(children, false).trim() !== '') bad('<struct> holds text outside <member>s');
  // A null prototype: a member named '__proto__' or 'constructor' is just a member.
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const member of elements(children)) {
    budget.count();
    if (member.tag !== 'member') bad(`<struct> holds <${member.tag.slice(0, 40)}>, expected <member>`);
    const parts = elements(member.children);
    const name = parts.find((p) => p.tag === 'name');
    const value = parts.find((p) => p.tag === 'value');
    if (parts.length !== 2 || !name || !value) bad('<member> must hold one <name> and one <value>');
    const key = textOf(name.children);
    // The bus's codec (msgpackr) renames this key on decode, so it would not arrive as sent: refused rather than changed.
    if (key === '__proto__') bad('a <struct> member named __proto__ cannot cross the bus: rename it');
    if (Object.prototype.hasOwnProperty.call(out, key)) bad(`<struct> names member ${JSON.stringify(key.slice(0, 60))} twice`);
    out[key] = readValue(value.children, budget, depth + 1);
  }
  return tensorOf(out, budget) ?? { ...out };
}

/** The tensor a `{dtype, shape, data}` struct stands for, or undefined when it is not one. */
function tensorOf(struct: Record<string, unknown>, budget: RequestBudget): tf.Tensor | undefined {
  const keys = Object.keys(struct);
  if (keys.length !== 3 || !(struct.data instanceof Uint8Array) || typeof struct.dtype !== 'string' || !Array.isArray(struct.shape)) return undefined;
  if (!keys.includes('dtype') || !keys.includes('shape')) return undefined;
  const dtype = struct.dtype;
  if (!TENSOR_DTYPES.has(dtype)) bad(`tensor dtype '${dtype.slice(0, 20)}' is not one of ${[...TENSOR_DTYPES].join(', ')}`);
  const itemBytes = elementBytes(dtype)!;
  const shape = struct.shape as unknown[];
  if (shape.length > 8) bad('a tensor has at most 8 dimensions');
  let size = 1;
  for (const d of shape) {
    if (typeof d !== 'number' || !Number.isSafeInteger(d) || d < 0) bad('tensor shape must be non-negative integers');
    size *= d;
  }
  const bytes = struct.data;
  if (size * itemBytes !== bytes.byteLength) bad(`tensor data holds ${bytes.byteLength} bytes; shape [${shape.join(', ')}] of ${dtype} needs ${size * itemBytes}`);
  budget.tensorData(bytes.byteLength);
  // The codec's own reading of tensor bytes (little-endian on the wire and on every host tfjs runs on): aligned, bools made 0/1.
  const tensor = tensorFromBytes(dtype, shape as number[], bytes, 0, bytes.byteLength);
  budget.tensors.push(tensor);
  return tensor;
}
