/**
 * Reading a request body as an XML tree with `fast-xml-parser`, safely: a
 * body that declares a DTD or an entity is refused before parsing (no
 * billion laughs, no external entity: nothing is ever expanded or fetched),
 * the parser itself expands no entity, and its nesting is bounded. The
 * parser spends about a microsecond on each character of text (it copies
 * text a character at a time), so one linear pass first counts the elements
 * and takes every run of text out of the body, leaving a short mark the
 * parser copies instead: what the parser costs is bounded by the element
 * count, not by the body's size. What comes out is the parser's ordered
 * tree with the text put back, the five predefined entities and character
 * references decoded in text by one non-recursive pass.
 * @module
 */
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import { GatewayError } from './errors.js';

/** A node of the ordered tree: an element (its name -> its children) or a text node. */
export type XmlNode = { readonly '#text': string } | { readonly [tag: string]: XmlNode[] };

/** An element: its name and its children. */
export interface XmlElement {
  tag: string;
  children: XmlNode[];
}

/** Markup that declares what a parser would expand or fetch; refused outright. */
const DECLARATIONS = /<!\s*(DOCTYPE|ENTITY|ELEMENT|ATTLIST|NOTATION)/i;

/**
 * Marks a run of text taken out of the body: `\u0001<index>\u0001`. XML 1.0
 * allows no U+0001, and a body holding it (or another such control
 * character) is refused, so no mark is ever the client's text.
 */
const MARK = '\u0001';
const MARKED = /\u0001([0-9]+)\u0001/g;
/** Characters XML 1.0 does not allow in a document. */
const FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/;
/** An `&` that does not start an entity or character reference (what the validator refuses in the text it still sees). */
const BARE_AMPERSAND = /&(?![A-Za-z_:][\w.:-]*;|#[0-9]+;|#x[0-9a-fA-F]+;)/;
/** Longest tag or processing instruction accepted, characters (the parser reads these a character at a time too; XML-RPC's are a few dozen). */
const MAX_TAG = 4096;
/** Runs of text at most this long stay in place (whitespace between tags, short values); longer ones are taken out. */
const KEEP_TEXT = 16;

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
  const forbidden = FORBIDDEN.exec(text);
  if (forbidden) {
    throw new GatewayError('GATEWAY_BAD_REQUEST', `the body holds character U+${forbidden[0].charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}, which XML does not allow`);
  }
  const { markup, texts } = prescan(text, bounds);
  const valid = XMLValidator.validate(markup);
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
    }).parse(markup) as XmlNode[];
  } catch (error) {
    throw new GatewayError('GATEWAY_BAD_REQUEST', `the body could not be parsed: ${error instanceof Error ? error.message.slice(0, 200) : 'unknown error'}`);
  }
  putBack(tree, texts);
  const roots = elements(tree);
  if (roots.length !== 1 || textOf(tree, false).trim() !== '') throw new GatewayError('GATEWAY_BAD_REQUEST', 'the body must hold exactly one root element');
  return roots[0]!;
}

/** The body with its long runs of text taken out, and those runs, by index. */
interface Prescanned {
  markup: string;
  texts: string[];
}

/**
 * One linear pass over the tags (comments, CDATA and processing instructions
 * skipped), before the validator and the parser spend anything on the body:
 * throws GATEWAY_LIMIT_EXCEEDED when elements nest deeper than
 * `bounds.maxTags` or number more than `bounds.maxElements`, and takes each
 * run of text longer than {@link KEEP_TEXT} out of the body, leaving its
 * mark (whitespace around the root element is dropped). A run with an `&` that starts no reference is GATEWAY_BAD_REQUEST,
 * as the validator would have said.
 */
function prescan(text: string, bounds: ParseBounds): Prescanned {
  let depth = 0;
  let count = 0;
  const pieces: string[] = [];
  const texts: string[] = [];
  // The end of the markup copied so far: text from here to the next '<' is a run of text.
  let copied = 0;
  // Markup that does not end stops the pass; the validator refuses the body, the rest left as it is.
  let unended = false;
  const takeText = (end: number) => {
    if (end - copied <= KEEP_TEXT) return;
    const run = text.slice(copied, end);
    if (depth === 0 && !/\S/.test(run)) {
      // Whitespace around the root element means nothing: dropped (a mark there would not be well formed).
      copied = end;
      return;
    }
    if (BARE_AMPERSAND.test(run)) throw new GatewayError('GATEWAY_BAD_REQUEST', "the body is not well-formed XML: an '&' in text starts no entity or character reference");
    pieces.push(MARK, String(texts.length), MARK);
    texts.push(run);
    copied = end;
  };
  for (let at = text.indexOf('<'); at >= 0; at = text.indexOf('<', at + 1)) {
    takeText(at);
    const skip = text.startsWith('<!--', at) ? '-->' : text.startsWith('<![CDATA[', at) ? ']]>' : undefined;
    let end: number;
    if (skip) {
      end = text.indexOf(skip, at);
      if ((unended = end < 0)) break;
      end += skip.length - 1;
    } else if (text.startsWith('<?', at)) {
      end = text.indexOf('?>', at);
      if ((unended = end < 0)) break;
      if (end - at > MAX_TAG) throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request holds a processing instruction longer than ${MAX_TAG} characters`);
      end += 1;
    } else {
      end = tagEnd(text, at);
      if ((unended = end < 0)) break;
      if (text[at + 1] === '/') depth--;
      else {
        if (++count > bounds.maxElements) {
          throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request holds more than ${bounds.maxElements} elements`);
        }
        if (text[end - 1] !== '/' && ++depth > bounds.maxTags) {
          throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request nests deeper than the gateway accepts (${bounds.maxTags} elements)`);
        }
      }
    }
    pieces.push(text.slice(copied, end + 1));
    copied = end + 1;
    at = end;
  }
  if (!unended) takeText(text.length);
  pieces.push(text.slice(copied));
  return { markup: texts.length === 0 ? text : pieces.join(''), texts };
}

/**
 * The index of the '>' that ends the tag opened at `at`, quoted attribute values skipped; -1 when the body ends first.
 * @throws GatewayError 'GATEWAY_LIMIT_EXCEEDED' for a tag longer than {@link MAX_TAG}.
 */
function tagEnd(text: string, at: number): number {
  const last = Math.min(text.length, at + MAX_TAG);
  for (let i = at + 1; i < last; i++) {
    const c = text[i];
    if (c === '>') return i;
    if (c === '"' || c === "'") {
      const close = text.indexOf(c, i + 1);
      if (close < 0) return -1;
      i = close;
    }
  }
  if (last === text.length) return -1;
  throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the request holds a tag longer than ${MAX_TAG} characters`);
}

/** Puts the runs of text {@link prescan} took out back in place of their marks, in every text node of `nodes`. */
function putBack(nodes: XmlNode[], texts: readonly string[]): void {
  if (texts.length === 0) return;
  for (const node of nodes as Record<string, unknown>[]) {
    for (const key of Object.keys(node)) {
      const value = node[key];
      if (key === '#text') {
        if (typeof value === 'string' && value.includes(MARK)) node[key] = value.replace(MARKED, (_, index: string) => texts[Number(index)]!);
      } else if (Array.isArray(value)) putBack(value as XmlNode[], texts);
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
