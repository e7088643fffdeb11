/**
 * A `methodCall` body to its method name and parameters.
 * @module
 */
import { InvalidArgumentError } from '@tensorbus/core';
import { GatewayError } from './errors.js';
import { RequestBudget } from './values-in.js';
import { readValue } from './values-in.js';
import { elements, parseXml, textOf, bodyText } from './xml-tree.js';

/** A parsed call. */
export interface MethodCall {
  methodName: string;
  params: unknown[];
}

/** Method names: XML-RPC's characters (letters, digits, `_ . : /`), 1 to 256 of them. */
const METHOD_NAME = /^[A-Za-z0-9_.:/-]{1,256}$/;

/** Tags of a call around its values: methodCall, params, param, value. */
const ENVELOPE_TAGS = 4;

/**
 * Reads a request body.
 * @throws GatewayError 'GATEWAY_BAD_REQUEST' when it is not a methodCall; 'GATEWAY_LIMIT_EXCEEDED' past a limit;
 *   InvalidArgumentError for a value of the wrong form.
 */
export function readMethodCall(body: Uint8Array, budget: RequestBudget): MethodCall {
  const { maxDepth, maxValues } = budget.limits;
  // Arrays and structs take 3 tags a level (value, array|struct, data|member). A value takes at most
  // 4 elements (param, value, its type, and array's data or a member's name), so a body of more
  // elements holds more than maxValues values: refused before it is parsed.
  const root = parseXml(bodyText(body), { maxTags: ENVELOPE_TAGS + 3 * (maxDepth + 1), maxElements: ENVELOPE_TAGS + 4 * maxValues });
  if (root.tag !== 'methodCall') throw new GatewayError('GATEWAY_BAD_REQUEST', `the root element is <${root.tag.slice(0, 40)}>, expected <methodCall>`);
  const parts = elements(root.children);
  const name = parts.find((p) => p.tag === 'methodName');
  if (!name) throw new GatewayError('GATEWAY_BAD_REQUEST', '<methodCall> has no <methodName>');
  const methodName = textOf(name.children).trim();
  if (!METHOD_NAME.test(methodName)) {
    throw new GatewayError('GATEWAY_BAD_REQUEST', `method name ${JSON.stringify(methodName.slice(0, 80))} is not 1 to 256 letters, digits, '_', '.', ':', '/' or '-'`);
  }
  const paramsElement = parts.find((p) => p.tag === 'params');
  const params: unknown[] = [];
  for (const param of paramsElement ? elements(paramsElement.children) : []) {
    const value = param.tag === 'param' ? elements(param.children) : [];
    if (value.length !== 1 || value[0]!.tag !== 'value') throw new InvalidArgumentError('each <param> must hold one <value>');
    params.push(readValue(value[0]!.children, budget, 1));
  }
  return { methodName, params };
}
