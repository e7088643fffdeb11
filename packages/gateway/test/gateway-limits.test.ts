/**
 * The gateway's limits and its refusal of hostile bodies: body size (declared
 * and chunked), nesting depth, number of values, tensor bytes, requests in
 * flight per client; DTDs and entities (billion laughs, external entities);
 * wrong types; wrong paths and methods. Each gets its answer, and the gateway
 * and the worker keep serving.
 */
import test from 'ava';
import { request } from 'node:http';
import { FAULT_CODES } from '../src/index.js';
import { transportKinds } from './helpers.js';
import { callBody, faultCodeOf, post, workerAndGateway } from './gateway-helpers.js';

const kind = transportKinds()[0]!;
const int = (n: number) => `<value><int>${n}</int></value>`;
const stillServes = async (url: string) => /<int>42<\/int>/.test((await post(url, callBody('w1.gw.echo', int(42)))).text);

/** Sends `chunks` as a chunked body (no Content-Length); resolves with the answer's text. */
function postChunked(url: string, chunks: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'text/xml' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    let i = 0;
    const next = () => {
      if (i === chunks.length) return req.end();
      // Stop sending once the gateway answered and closed: it does not read the rest.
      if (req.destroyed) return;
      req.write(chunks[i++], () => setImmediate(next));
    };
    next();
  });
}

test(`${kind.name} - gateway limits - a body declared larger than the limit is refused before it is read; a chunked one once it passes the limit`, async (t) => {
  const { gateway } = await workerAndGateway(t, kind, { limits: { maxBodyBytes: 4096 } });
  const big = callBody('w1.gw.echo', `<value>${'x'.repeat(10_000)}</value>`);
  t.is(faultCodeOf((await post(gateway.url, big)).text), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED);
  const chunks = Array.from({ length: 64 }, () => 'y'.repeat(1024));
  const text = await postChunked(gateway.url, [`<?xml version="1.0"?><methodCall><methodName>w1.gw.echo</methodName><params><param><value>`, ...chunks]).catch((e: Error) => e.message);
  t.is(faultCodeOf(text), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED, text);
  t.true(await stillServes(gateway.url));
});

test(`${kind.name} - gateway limits - nesting deeper than maxDepth, more values than maxValues, tensors past maxTensorBytes are refused`, async (t) => {
  const { gateway } = await workerAndGateway(t, kind, { limits: { maxDepth: 8, maxValues: 100, maxTensorBytes: 1024 } });
  const nested = (depth: number) => `${'<value><array><data>'.repeat(depth)}${int(1)}${'</data></array></value>'.repeat(depth)}`;
  t.is(faultCodeOf((await post(gateway.url, callBody('w1.gw.echo', nested(6)))).text), undefined, 'within the depth');
  t.is(faultCodeOf((await post(gateway.url, callBody('w1.gw.echo', nested(40)))).text), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED);
  const many = `<value><array><data>${int(1).repeat(200)}</data></array></value>`;
  t.is(faultCodeOf((await post(gateway.url, callBody('w1.gw.echo', many))).text), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED);
  const tensor = (floats: number) =>
    `<value><struct><member><name>dtype</name><value>float32</value></member><member><name>shape</name><value><array><data>${int(floats)}</data></array></value></member><member><name>data</name><value><base64>${Buffer.alloc(floats * 4).toString('base64')}</base64></value></member></struct></value>`;
  t.is(faultCodeOf((await post(gateway.url, callBody('w1.gw.echo', tensor(16)))).text), undefined);
  t.is(faultCodeOf((await post(gateway.url, callBody('w1.gw.echo', tensor(512)))).text), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED);
  t.true(await stillServes(gateway.url));
});

test(`${kind.name} - gateway limits - a client past its requests in flight is refused; the others are served`, async (t) => {
  const { gateway } = await workerAndGateway(t, kind, { limits: { maxInFlightPerClient: 2 } });
  const answers = await Promise.all([0, 1, 2].map(() => post(gateway.url, callBody('w1.gw.slow', int(600)))));
  const codes = answers.map((a) => faultCodeOf(a.text));
  t.is(codes.filter((c) => c === FAULT_CODES.GATEWAY_LIMIT_EXCEEDED).length, 1, JSON.stringify(codes));
  t.is(answers.filter((a) => /<int>600<\/int>/.test(a.text)).length, 2);
  t.true(await stillServes(gateway.url), 'the count went back down');
});

test(`${kind.name} - gateway xml - billion laughs and external entities are refused with a fault; nothing is expanded or read, and the gateway serves on`, async (t) => {
  const { gateway } = await workerAndGateway(t, kind);
  const laughs = `<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"><!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"><!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">]><methodCall><methodName>w1.gw.echo</methodName><params><param><value>&lol9;</value></param></params></methodCall>`;
  const external = `<?xml version="1.0"?><!DOCTYPE x [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><methodCall><methodName>w1.gw.echo</methodName><params><param><value>&xxe;</value></param></params></methodCall>`;
  for (const body of [laughs, external]) {
    const answer = await post(gateway.url, body);
    t.is(answer.status, 200);
    t.is(faultCodeOf(answer.text), FAULT_CODES.GATEWAY_BAD_REQUEST);
    t.false(answer.text.includes('root:'), 'no file was read');
  }
  // An undeclared entity is left as written (nothing to expand it with).
  const undeclared = await post(gateway.url, callBody('w1.gw.echo', '<value>&lol;</value>'));
  t.regex(undeclared.text, /<string>&amp;lol;<\/string>/);
  t.true(await stillServes(gateway.url));
});

test(`${kind.name} - gateway xml - wrong types are INVALID_ARGUMENT faults, a malformed body or method name GATEWAY_BAD_REQUEST, a wrong path 404 and GET 405`, async (t) => {
  const { gateway } = await workerAndGateway(t, kind);
  for (const value of ['<value><int>abc</int></value>', '<value><int>99999999999</int></value>', '<value><boolean>2</boolean></value>', '<value><base64>!!</base64></value>', '<value><dateTime.iso8601>yesterday</dateTime.iso8601></value>', '<value><blob/></value>', '<value><string><b/>x</string></value>', '<value><int><i4>1</i4></int></value>']) {
    t.is(faultCodeOf((await post(gateway.url, callBody('w1.gw.echo', value))).text), FAULT_CODES.INVALID_ARGUMENT, value);
  }
  const tensorBadSize = `<value><struct><member><name>dtype</name><value>float32</value></member><member><name>shape</name><value><array><data>${int(3)}</data></array></value></member><member><name>data</name><value><base64>AAAA</base64></value></member></struct></value>`;
  t.is(faultCodeOf((await post(gateway.url, callBody('w1.gw.echo', tensorBadSize))).text), FAULT_CODES.INVALID_ARGUMENT);
  for (const body of ['<methodCall><methodName>w1.gw.echo</methodName>', 'not xml at all', '<methodCall><methodName>bad name!</methodName></methodCall>', '<methodResponse/>']) {
    t.is(faultCodeOf((await post(gateway.url, body)).text), FAULT_CODES.GATEWAY_BAD_REQUEST, body);
  }
  t.is(faultCodeOf((await post(gateway.url, callBody('w1.tb.registry.list'))).text), FAULT_CODES.UNKNOWN_FUNCTION, 'protocol functions are not callable');
  t.is((await post(gateway.url.replace('/RPC2', '/other'), callBody('w1.gw.echo', int(1)))).status, 404);
  t.is((await fetch(gateway.url)).status, 405);
  t.true(await stillServes(gateway.url));
});

test(`${kind.name} - gateway values - with allowNil off a null result is a SERIALIZATION fault instead of <nil/>`, async (t) => {
  const { gateway } = await workerAndGateway(t, kind, { allowNil: false });
  t.is(faultCodeOf((await post(gateway.url, callBody('w1.gw.echo', '<value><nil/></value>'))).text), FAULT_CODES.SERIALIZATION);
  t.regex((await post(gateway.url, callBody('w1.gw.echo', int(3)))).text, /<int>3<\/int>/);
});
