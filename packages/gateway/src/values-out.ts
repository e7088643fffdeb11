/**
 * JavaScript values out, as XML-RPC: what a worker returned to a
 * `<methodResponse>`. Integers of 32 bits are `<int>`, other numbers
 * `<double>` (NaN and infinities as `nan`, `inf`, `-inf`), tensors structs
 * `{dtype, shape, data}` with `data` base64 of the little-endian values,
 * byte arrays base64, Dates dateTime.iso8601 (UTC), Maps and objects structs,
 * RRefs the handle string the gateway made for them, null and undefined
 * `<nil/>` (or a fault when nil is turned off).
 * @module
 */
import { SerializationError, tf } from '@tensorbus/core';
import { GatewayError } from './errors.js';
import { elementBytes, tensorBytes } from '@tensorbus/core/internal';
import { RRef } from '@tensorbus/actors/internal';
import type { Fault } from './faults.js';

/** How values are written. */
export interface WriteOptions {
  /** Write null as `<nil/>` (the common extension); when false, a null is a SERIALIZATION fault. */
  allowNil: boolean;
  /** Deepest nesting written. */
  maxDepth: number;
  /** Turns an RRef of the result into the handle the client gets. */
  handleOf(rref: RRef<unknown>): string;
}

/**
 * The text of a response as it is written, bounded: past `maxChars` it
 * throws GATEWAY_LIMIT_EXCEEDED, and base64 data is counted before it is
 * encoded, so a large result is refused without ever being written out.
 */
export class XmlOut {
  private readonly parts: string[] = [];
  private chars = 0;

  constructor(private readonly maxChars: number) {}

  /** Counts `chars` more characters of the response; throws past the bound. */
  private reserve(chars: number): void {
    this.ensureRoom(chars);
    this.chars += chars;
  }

  /** Throws when `chars` more characters would not fit. */
  ensureRoom(chars: number): void {
    if (this.chars + chars > this.maxChars) {
      throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the result is larger than the gateway sends (maxResultBytes ${this.maxChars}): ask for less, or for a handle (RRef) and parts of it`);
    }
  }

  /** Appends `texts`, counted. */
  push(...texts: string[]): void {
    for (const text of texts) this.reserve(text.length);
    this.parts.push(...texts);
  }

  /** Appends base64 of `bytes`, counted before it is encoded. */
  pushBase64(bytes: Uint8Array): void {
    this.reserve(4 * Math.ceil(bytes.byteLength / 3));
    this.parts.push(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'));
  }

  /** The whole text. */
  text(): string {
    return this.parts.join('');
  }
}

/** Characters XML 1.0 cannot carry, even escaped. */
const NOT_XML = /[\x00-\x08\x0B\x0C\x0E-\x1F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** `text` escaped for XML character data. */
export function escapeXml(text: string): string {
  if (NOT_XML.test(text)) throw new SerializationError('a string holds a character XML cannot carry (a control character or a lone surrogate): send it as bytes');
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\r/g, '&#13;');
}

function isoDate(date: Date): string {
  if (Number.isNaN(date.getTime())) throw new SerializationError('an invalid Date cannot be written');
  return date.toISOString().replace(/\.\d{3}Z$/, '').replace(/-/g, '');
}

function writeNumber(n: number, out: XmlOut): void {
  if (Number.isInteger(n) && n >= -(2 ** 31) && n <= 2 ** 31 - 1 && !Object.is(n, -0)) out.push('<int>', String(n), '</int>');
  else if (Number.isNaN(n)) out.push('<double>nan</double>');
  else if (!Number.isFinite(n)) out.push(n > 0 ? '<double>inf</double>' : '<double>-inf</double>');
  else out.push('<double>', String(n), '</double>');
}

function writeTensor(tensor: tf.Tensor, out: XmlOut): void {
  const dtype = tensor.dtype;
  if (dtype !== 'float32' && dtype !== 'int32' && dtype !== 'bool') throw new SerializationError(`a ${dtype} tensor cannot cross the gateway (float32, int32 and bool do)`);
  const byteLength = tensor.size * elementBytes(dtype)!;
  // Refused before the tensor's data is read, let alone encoded.
  out.ensureRoom(4 * Math.ceil(byteLength / 3));
  const bytes = tensorBytes(tensor, byteLength);
  out.push('<struct><member><name>dtype</name><value><string>', dtype, '</string></value></member><member><name>shape</name><value><array><data>');
  for (const d of tensor.shape) out.push('<value><int>', String(d), '</int></value>');
  out.push('</data></array></value></member><member><name>data</name><value><base64>');
  out.pushBase64(bytes);
  out.push('</base64></value></member></struct>');
}

/** Appends `<value>…</value>` for `value` to `out`. */
export function writeValue(value: unknown, options: WriteOptions, out: XmlOut, depth = 0): void {
  if (depth > options.maxDepth) throw new SerializationError(`the result nests deeper than ${options.maxDepth} levels`);
  out.push('<value>');
  if (value === null || value === undefined) {
    if (!options.allowNil) throw new SerializationError('the result holds a null, and nil is turned off for this gateway');
    out.push('<nil/>');
  } else if (typeof value === 'number') writeNumber(value, out);
  else if (typeof value === 'boolean') out.push('<boolean>', value ? '1' : '0', '</boolean>');
  else if (typeof value === 'string') out.push('<string>', escapeXml(value), '</string>');
  else if (typeof value === 'bigint') {
    if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < -BigInt(Number.MAX_SAFE_INTEGER)) throw new SerializationError('an integer beyond 2^53 cannot be written');
    writeNumber(Number(value), out);
  } else if (value instanceof tf.Tensor) writeTensor(value, out);
  else if (value instanceof RRef) out.push('<string>', escapeXml(options.handleOf(value)), '</string>');
  else if (value instanceof Uint8Array) {
    out.push('<base64>');
    out.pushBase64(value);
    out.push('</base64>');
  }
  else if (value instanceof Date) out.push('<dateTime.iso8601>', isoDate(value), '</dateTime.iso8601>');
  else if (Array.isArray(value) || ArrayBuffer.isView(value)) {
    out.push('<array><data>');
    for (const item of Array.isArray(value) ? value : Array.from(value as unknown as ArrayLike<number>)) writeValue(item, options, out, depth + 1);
    out.push('</data></array>');
  } else if (value instanceof Map) {
    out.push('<struct>');
    for (const [key, item] of value) writeMember(String(key), item, options, out, depth);
    out.push('</struct>');
  } else if (typeof value === 'object') {
    out.push('<struct>');
    for (const [key, item] of Object.entries(value)) if (item !== undefined && typeof item !== 'function') writeMember(key, item, options, out, depth);
    out.push('</struct>');
  } else throw new SerializationError(`a ${typeof value} cannot be written as XML-RPC`);
  out.push('</value>');
}

function writeMember(key: string, item: unknown, options: WriteOptions, out: XmlOut, depth: number): void {
  out.push('<member><name>', escapeXml(key), '</name>');
  writeValue(item, options, out, depth + 1);
  out.push('</member>');
}

/** Calls `visit` for every RRef nested in `value` (arrays, plain objects, Maps), the same places {@link writeValue} looks. */
export function forEachRRef(value: unknown, visit: (rref: RRef<unknown>) => void, depth = 0): void {
  if (value === null || typeof value !== 'object' || depth > 512) return;
  if (value instanceof RRef) visit(value);
  else if (Array.isArray(value)) for (const item of value) forEachRRef(item, visit, depth + 1);
  else if (value instanceof Map) for (const item of value.values()) forEachRRef(item, visit, depth + 1);
  else if (!(value instanceof tf.Tensor) && !ArrayBuffer.isView(value) && !(value instanceof Date)) {
    for (const item of Object.values(value)) forEachRRef(item, visit, depth + 1);
  }
}

const HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<methodResponse>';

/**
 * A `<methodResponse>` carrying `value`, at most `maxChars` long.
 * @throws GatewayError 'GATEWAY_LIMIT_EXCEEDED' past it; SerializationError for a value XML-RPC cannot carry.
 */
export function responseXml(value: unknown, options: WriteOptions, maxChars: number): string {
  const out = new XmlOut(maxChars);
  out.push(HEAD, '<params><param>');
  writeValue(value, options, out);
  out.push('</param></params></methodResponse>\n');
  return out.text();
}

/** A `<methodResponse>` carrying `fault`. */
export function faultXml(fault: Fault): string {
  const out = new XmlOut(Number.MAX_SAFE_INTEGER);
  out.push(HEAD, '<fault>');
  writeValue({ faultCode: fault.faultCode, faultString: fault.faultString.replace(NOT_XML_GLOBAL, '\uFFFD') }, { allowNil: true, maxDepth: 2, handleOf: () => '' }, out);
  out.push('</fault></methodResponse>\n');
  return out.text();
}

const NOT_XML_GLOBAL = new RegExp(NOT_XML.source, 'g');
