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
import { elementBytes, tensorBytes } from '@tensorbus/core/internal';
import { RRef } from '../rref/rref.js';
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

function writeNumber(n: number, out: string[]): void {
  if (Number.isInteger(n) && n >= -(2 ** 31) && n <= 2 ** 31 - 1 && !Object.is(n, -0)) out.push('<int>', String(n), '</int>');
  else if (Number.isNaN(n)) out.push('<double>nan</double>');
  else if (!Number.isFinite(n)) out.push(n > 0 ? '<double>inf</double>' : '<double>-inf</double>');
  else out.push('<double>', String(n), '</double>');
}

function writeTensor(tensor: tf.Tensor, out: string[]): void {
  const dtype = tensor.dtype;
  if (dtype !== 'float32' && dtype !== 'int32' && dtype !== 'bool') throw new SerializationError(`a ${dtype} tensor cannot cross the gateway (float32, int32 and bool do)`);
  const bytes = tensorBytes(tensor, tensor.size * elementBytes(dtype)!);
  out.push('<struct><member><name>dtype</name><value><string>', dtype, '</string></value></member><member><name>shape</name><value><array><data>');
  for (const d of tensor.shape) out.push('<value><int>', String(d), '</int></value>');
  out.push('</data></array></value></member><member><name>data</name><value><base64>', Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'), '</base64></value></member></struct>');
}

/** Appends `<value>…</value>` for `value` to `out`. */
export function writeValue(value: unknown, options: WriteOptions, out: string[], depth = 0): void {
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
  else if (value instanceof Uint8Array) out.push('<base64>', Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64'), '</base64>');
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

function writeMember(key: string, item: unknown, options: WriteOptions, out: string[], depth: number): void {
  out.push('<member><name>', escapeXml(key), '</name>');
  writeValue(item, options, out, depth + 1);
  out.push('</member>');
}

const HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n<methodResponse>';

/** A `<methodResponse>` carrying `value`. */
export function responseXml(value: unknown, options: WriteOptions): string {
  const out = [HEAD, '<params><param>'];
  writeValue(value, options, out);
  out.push('</param></params></methodResponse>\n');
  return out.join('');
}

/** A `<methodResponse>` carrying `fault`. */
export function faultXml(fault: Fault): string {
  const out = [HEAD, '<fault>'];
  writeValue({ faultCode: fault.faultCode, faultString: fault.faultString.replace(NOT_XML_GLOBAL, '\uFFFD') }, { allowNil: true, maxDepth: 2, handleOf: () => '' }, out);
  out.push('</fault></methodResponse>\n');
  return out.join('');
}

const NOT_XML_GLOBAL = new RegExp(NOT_XML.source, 'g');
