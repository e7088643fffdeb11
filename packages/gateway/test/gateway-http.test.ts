/**
 * The gateway's HTTP front: what a web page of another origin can make it do
 * (nothing: a real Chromium tries), foreign Host and Origin headers and
 * bodies that are not text/xml, slots taken only once a body is read and
 * given back when the client goes away, and bounded connections.
 */
import test from 'ava';
import { createServer, request, type ClientRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { FAULT_CODES } from '../src/index.js';
import { transportKinds } from './helpers.js';
import { callBody, faultCodeOf, post, postFrom, workerAndGateway } from './gateway-helpers.js';
import { openPage } from './browser.js';
import { marks } from './fixtures/gateway-functions.js';

const int = (n: number) => `<value><int>${n}</int></value>`;
const first = transportKinds()[0]!;

/** Sends the headers of a POST and `part` of its body, and no more; resolves with the request and its answer to come. */
function stalledPost(url: string, body: string, part: number): { req: ClientRequest; answer: Promise<string> } {
  let req!: ClientRequest;
  const answer = new Promise<string>((resolve, reject) => {
    req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'text/xml', 'content-length': String(body.length) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.write(body.slice(0, part));
  });
  return { req, answer };
}

/** Opens a TCP connection from `from` that sends nothing; resolves once it is open, with a promise of its close. */
async function idleConnection(port: number, from: string): Promise<{ socket: Socket; closed: Promise<boolean> }> {
  const socket = connect({ host: '127.0.0.1', port, localAddress: from });
  const closed = new Promise<boolean>((resolve) => socket.once('close', () => resolve(true)));
  socket.on('error', () => undefined);
  await new Promise((resolve) => socket.once('connect', resolve));
  return { socket, closed };
}

test.serial(`${first.name} - gateway http - a page of another origin in a real browser cannot make the gateway run a function`, async (t) => {
  const { gateway } = await workerAndGateway(t, first);
  const page = createServer((_req, res) => res.end('<!doctype html><title>elsewhere</title>'));
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  t.teardown(() => page.close());
  const browser = await openPage(`http://127.0.0.1:${(page.address() as AddressInfo).port}/`);
  t.teardown(() => browser.close());
  const before = marks.count;
  const body = JSON.stringify(callBody('w1.gw.mark'));
  // Every way a page may POST without the gateway's consent: no-cors with a text/plain body, with an XML Blob, and with the form type.
  const tried = await browser.evaluate<string[]>(`(async () => { try { return await Promise.all([
    fetch(${JSON.stringify(gateway.url)}, { method: 'POST', mode: 'no-cors', body: ${body} }),
    fetch(${JSON.stringify(gateway.url)}, { method: 'POST', mode: 'no-cors', body: new Blob([${body}], { type: 'text/xml' }) }),
    fetch(${JSON.stringify(gateway.url)}, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: ${body} }),
    fetch(${JSON.stringify(gateway.url)}, { method: 'POST', headers: { 'content-type': 'text/xml' }, body: ${body} }).then(() => 'read', (e) => 'blocked'),
  ].map((p) => Promise.resolve(p).then((r) => (typeof r === 'string' ? r : r.type), (e) => 'error: ' + e.message))); } catch (e) { return ['threw ' + e]; } })()`);
  t.is(tried.length, 4, JSON.stringify(tried));
  t.is(tried[3], 'blocked', 'the CORS preflight is never granted');
  // The same call from an XML-RPC client runs, so the page's calls were refused, not lost.
  t.regex((await post(gateway.url, callBody('w1.gw.mark'))).text, /<int>\d+<\/int>/);
  t.is(marks.count, before + 1, 'only the XML-RPC client ran gw.mark');
});

test(`${first.name} - gateway http - a foreign Host (DNS rebinding), a foreign Origin and a body that is not text/xml are refused before anything runs`, async (t) => {
  const { gateway } = await workerAndGateway(t, first);
  const before = marks.count;
  const body = callBody('w1.gw.mark');
  const port = gateway.port;
  t.is((await postFrom(gateway.url, body, '127.0.0.1', { host: `rebound.example:${port}` })).status, 403);
  t.is((await postFrom(gateway.url, body, '127.0.0.1', { origin: 'http://127.0.0.1:1' })).status, 403);
  t.is((await postFrom(gateway.url, body, '127.0.0.1', { origin: `http://evil.example:${port}` })).status, 403);
  t.is((await postFrom(gateway.url, body, '127.0.0.1', { 'content-type': 'text/plain' })).status, 415);
  t.is((await postFrom(gateway.url, body, '127.0.0.1', { 'content-type': 'application/x-www-form-urlencoded' })).status, 415);
  t.is(marks.count, before, 'nothing ran');
  // Its own origin, loopback names and text/xml with parameters are served.
  for (const headers of <Array<Record<string, string>>>[{ origin: `http://127.0.0.1:${port}` }, { host: `localhost:${port}` }, { 'content-type': 'text/xml; charset=utf-8' }]) {
    t.regex((await postFrom(gateway.url, callBody('w1.gw.echo', int(4)), '127.0.0.1', headers)).text, /<int>4<\/int>/, JSON.stringify(headers));
  }
});

for (const kind of transportKinds('without-tcp')) {
  test(`${kind.name} - gateway http - a slow body holds no slot, and is refused after bodyTimeoutMs`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind, { limits: { maxInFlightPerClient: 1, bodyTimeoutMs: 1_500 } });
    const body = callBody('w1.gw.echo', int(1));
    const slow = stalledPost(gateway.url, body, 40);
    slow.answer.catch(() => undefined);
    t.teardown(() => slow.req.destroy());
    await new Promise((resolve) => setTimeout(resolve, 200));
    t.regex((await post(gateway.url, callBody('w1.gw.echo', int(2)))).text, /<int>2<\/int>/, 'the slow body took no slot');
    const late = await slow.answer;
    t.is(faultCodeOf(late), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED, late);
    t.regex(late, /did not arrive within 1500 ms/);
  });

  test(`${kind.name} - gateway http - a client that goes away frees its slot at once and its calls are cancelled (a multicall stops)`, async (t) => {
    const { gateway, lines } = await workerAndGateway(t, kind, { limits: { maxInFlightPerClient: 1 } });
    const calls = Array.from({ length: 20 }, () => `<value><struct><member><name>methodName</name><value>w1.gw.slow</value></member><member><name>params</name><value><array><data>${int(500)}</data></array></value></member></struct></value>`);
    for (const body of [callBody('w1.gw.slow', int(8_000)), callBody('system.multicall', `<value><array><data>${calls.join('')}</data></array></value>`)]) {
      const left = stalledPost(gateway.url, body, body.length);
      left.answer.catch(() => undefined);
      left.req.end();
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = Date.now();
      left.req.destroy();
      // The gateway hears of the close in a moment (not after the 8 s call, or the 20 calls of the multicall).
      await new Promise((resolve) => setTimeout(resolve, 300));
      t.regex((await post(gateway.url, callBody('w1.gw.echo', int(3)))).text, /<int>3<\/int>/, 'the slot was given back');
      // Logged once the request ended: at once, not after the 8 s call or the 10 s multicall.
      const abandoned = () => lines.filter((line) => line.includes('outcome=abandoned')).length;
      const want = body.includes('multicall') ? 2 : 1;
      while (abandoned() < want && Date.now() - started < 4_000) await new Promise((resolve) => setTimeout(resolve, 20));
      t.is(abandoned(), want, lines.join('\n'));
    }
  });
}

test.serial(`${first.name} - gateway http - connections are bounded per address and closed when they send nothing; other addresses are served`, async (t) => {
  const { gateway } = await workerAndGateway(t, first, { limits: { maxConnectionsPerAddress: 4, headersTimeoutMs: 1_500 } });
  const held = await Promise.all([0, 1, 2, 3].map(() => idleConnection(gateway.port, '127.0.0.7')));
  const extra = await idleConnection(gateway.port, '127.0.0.7');
  const closedAtOnce = await Promise.race([extra.closed.then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 1_000))]);
  t.true(closedAtOnce, 'a fifth connection from one address is closed at once');
  t.regex((await postFrom(gateway.url, callBody('w1.gw.echo', int(5)), '127.0.0.8')).text, /<int>5<\/int>/, 'another address is served');
  // Connections that never send their headers are closed after headersTimeoutMs; then the address is served again.
  const closedIdle = await Promise.race([Promise.all(held.map((s) => s.closed)).then(() => true), new Promise((resolve) => setTimeout(() => resolve(false), 8_000))]);
  t.true(closedIdle, 'silent connections were closed');
  t.regex((await postFrom(gateway.url, callBody('w1.gw.echo', int(6)), '127.0.0.7')).text, /<int>6<\/int>/);
});
