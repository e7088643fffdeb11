/**
 * Reading a request body as an XML tree with `fast-xml-parser`, safely: a
 * body that declares a DTD or an entity is refused before parsing (no
 * billion laughs, no external entity: nothing is ever expanded or fetched),
 * the parser itself expands no entity, and its nesting is bounded. What
 * comes out is the parser's ordered tree, with the five predefined entities
 * and character references decoded in text by one non-recursive pass.
 * @module
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { GatewayError } from '@tensorbus/core';

/** A node of the ordered tree: an element (its name -> its children) or a text node. */
export type XmlNode = { readonly '#text': string } | { readonly [tag: string]: XmlNode[] };

/** An element: its name and its children. */
export interface XmlElement {
  tag: string;
  children: XmlNode[];
}

/** Markup that declares what a parser would expand or fetch; refused outright. */
const DECLARATIONS = /<!\s*(DOCTYPE|ENTITY|ELEMENT|ATTLIST|NOTATION)/i;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as text: UTF-8 only (XML-RPC's default), refused otherwise. */
export function bodyText(body: Uint8Array): string {
  try {
    return utf8.decode(body);
  } catch {
    throw new GatewayError('GATEWAY_BAD_REQUEST', 'the request body is not valid UTF-8');
  }
}

/** Bounds checked over the raw text before the validator and the parser run. */
export interface ParseBounds {
  /** Deepest element nesting accepted. */
  maxTags: number;
  /** Most elements accepted in the whole body. */
  maxElements: number;
}

/**
 * The single root element of `text`.
 * @throws GatewayError 'GATEWAY_BAD_REQUEST' for a DTD or entity declaration, XML that is not well formed, or not one root element;
 *   'GATEWAY_LIMIT_EXCEEDED' past `bounds`, found in one linear pass before any parsing.
 */
export function parseXml(text: string, bounds: ParseBounds): XmlElement {
  if (DECLARATIONS.test(text)) {
    throw new GatewayError('GATEWAY_BAD_REQUEST', 'the body declares a DTD or an entity (<!DOCTYPE, <!ENTITY): refused, the gateway expands and fetches nothing');
  }
  prescan(text, bounds);
  const valid = XMLValidator.validate(text);
  if (valid !== true) {
    throw new GatewayError('GATEWAY_BAD_REQUEST', `the body is not well-formed XML: line ${valid.err.line}, column ${valid.err.col}: ${valid.err.msg.slice(0, 200)}`);
  }
  let tree: XmlNode[];
  try {
    tree = new XMLParser({
      preserveOrder: true,
      ignoreAttributes: true,
      parseTagValue: false,
      trimValues: false,
      processEntities: false,
      ignoreDeclaration: true,
      ignorePiTags: true,
      commentPropName: false,
      maxNestedTags: bounds.maxTags + 2,
    }).parse(text) as XmlNode[];
  } catch (error) {
    throw new GatewayError('GATEWAY_BAD_REQUEST', `the body could not be parsed: ${error instanceof Error ? error.message.slice(0, 200) : 'unknown error'}`);
  }
  const roots = elements(tree);
  if (roots.length !== 1 || textOf(tree, false).trim() !== '') throw new GatewayError('GATEWAY_BAD_REQUEST', 'the body must hold exactly one root element');
  return roots[0]!;
}

/**
 * Throws GATEWAY_LIMIT_EXCEEDED when elements nest deeper than
 * `bounds.maxTags` or number more than `bounds.maxElements`: one linear pass
 * over the tags (comments, CDATA and processing instructions skipped),
 * before the validator and the parser spend anything on the body.
 */
function prescan(text: string, bounds: ParseBounds): void {
  let depth = 0;
  let count = 0;
  for (let at = text.indexOf('<'); at >= 0; at = text.indexOf('<', at + 1)) {
    const skip = text.startsWith('<!--', at) ? '-->' : text.startsWith('<![CDATA[', at) ? ']]>' : text.startsWith('<?', at) ? '?>' : undefined;
    if (skip) {
      const end = text.indexOf(skip, at);
      if (end < 0) return; // not well formed: the validator says so
      at = end;
    } else if (text[at + 1] === '/') depth--;
    else {
      const end = text.indexOf('>', at);
      if (end < 0) return;
      if (++count > bounds.maxElements) {
        throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request holds more than ${bounds.maxElements} elements`);
      }
      if (text[end - 1] !== '/' && ++depth > bounds.maxTags) {
        throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request nests deeper than the gateway accepts (${bounds.maxTags} elements)`);
      }
      at = end;
    }
  }
}

/** The element children of `nodes`, in order. */
export function elements(nodes: readonly XmlNode[]): XmlElement[] {
  const out: XmlElement[] = [];
  for (const node of nodes) {
    for (const key of Object.keys(node)) {
      if (key === '#text' || key === ':@') continue;
      out.push({ tag: key, children: (node as Record<string, XmlNode[]>)[key]! });
    }
  }
  return out;
}

/** The text directly inside `nodes` (entities decoded when `decode`), ignoring child elements. */
export function textOf(nodes: readonly XmlNode[], decode = true): string {
  let text = '';
  for (const node of nodes) {
    const value = (node as { '#text'?: unknown })['#text'];
    // Always a string: tag values are not parsed (parseTagValue: false).
    if (typeof value === 'string') text += value;
  }
  return decode ? decodeEntities(text) : text;
}

const ENTITY = /&(lt|gt|amp|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});/g;
const NAMED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

/** Decodes XML's five predefined entities and character references; anything else stays as written. One pass: `&amp;lt;` is `&lt;`. */
export function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(ENTITY, (whole, name: string) => {
    if (name[0] !== '#') return NAMED[name]!;
    const point = name[1] === 'x' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    if (point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff) || point === 0) {
      throw new GatewayError('GATEWAY_BAD_REQUEST', `character reference ${whole} names no character`);
    }
    return String.fromCodePoint(point);
  });
}
