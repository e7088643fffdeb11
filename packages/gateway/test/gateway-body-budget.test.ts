/**
 * The gateway's budget of request bodies in flight, over real sockets: the
 * bytes of bodies being read are bounded per client address and in all,
 * whether their length is declared or they arrive chunked; a body past a
 * budget is HTTP 503 with Retry-After at once, and the bytes are given back
 * when a body is parsed or its connection closes.
 */
import test from 'ava';
import { request, type ClientRequest } from 'node:http';
import { transportKinds } from './helpers.js';
import { callBody, postFrom, workerAndGateway } from './gateway-helpers.js';

const MiB = 1024 * 1024;
const int = (n: number) => `<value><int>${n}</int></value>`;

/** An echo call of `n` padded with whitespace to `size` bytes. */
function paddedCall(n: number, size: number): string {
  const body = callBody('w1.gw.echo', int(n));
  const at = body.indexOf('<methodName>');
  return body.slice(0, at) + ' '.repeat(size - body.length) + body.slice(at);
}

interface Answer {
  status: number;
  retryAfter: string | undefined;
  text: string;
}

/**
 * A POST from `from` that sends its headers (a declared length unless
 * `chunked`) and the first `part` bytes of `body`, then waits; its answer,
 * or `undefined` when none came within `withinMs`.
 */
function stalledPost(url: string, from: string, body: string, part: number, chunked = false, withinMs = 3_000): { req: ClientRequest; answer: Promise<Answer | undefined> } {
  const headers: Record<string, string> = { 'content-type': 'text/xml', ...(chunked ? {} : { 'content-length': String(body.length) }) };
  const req = request(url, { method: 'POST', localAddress: from, agent: false, headers });
  const answer = new Promise<Answer | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), withinMs);
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'], text });
      });
    });
    // A refused request may see its socket closed while it still writes.
    req.on('error', () => undefined);
  });
  req.write(body.slice(0, part));
  return { req, answer };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const kind of transportKinds('without-tcp')) {
  test(`${kind.name} - gateway body budget - declared bodies past the budget of one address, or of the gateway, are 503 with Retry-After at once; a closed connection gives its bytes back`, async (t) => {
    const limits = { maxBodyBytes: MiB, maxBodyBytesInFlightPerAddress: 2 * MiB, maxBodyBytesInFlight: 3 * MiB };
    const { gateway } = await workerAndGateway(t, kind, { limits });
    const big = paddedCall(1, MiB);
    // Two bodies of 1 MiB from one address, their headers sent and a little of each: the address's 2 MiB are held.
    const held = [stalledPost(gateway.url, '127.0.0.21', big, 1024, false, 20_000), stalledPost(gateway.url, '127.0.0.21', big, 1024, false, 20_000)];
    t.teardown(() => held.forEach((h) => h.req.destroy()));
    await pause(300);
    const third = await stalledPost(gateway.url, '127.0.0.21', big, 1024).answer;
    t.is(third?.status, 503, 'a third body of the address is refused at once, not read');
    t.is(third?.retryAfter, '1');
    t.regex(third?.text ?? '', /retry/);
    // Another address has a budget of its own, within the gateway's 3 MiB.
    const other = stalledPost(gateway.url, '127.0.0.22', big, 1024, false, 20_000);
    t.teardown(() => other.req.destroy());
    await pause(300);
    const small = paddedCall(2, 1024);
    const refused = await postFrom(gateway.url, small, '127.0.0.23');
    t.is(refused.status, 503, 'the gateway holds 3 MiB of bodies: even a small one waits');
    // One held body's connection closes: its bytes are given back, and the small body is served.
    held[0]!.req.destroy();
    await pause(300);
    t.regex((await postFrom(gateway.url, small, '127.0.0.23')).text, /<int>2<\/int>/);
    // A held body that arrives whole is parsed and served; its bytes are given back after.
    held[1]!.req.end(big.slice(1024));
    other.req.end(big.slice(1024));
    t.regex((await held[1]!.answer)?.text ?? '', /<int>1<\/int>/);
    t.regex((await other.answer)?.text ?? '', /<int>1<\/int>/);
    const again = await Promise.all([0, 1].map(() => stalledPost(gateway.url, '127.0.0.21', big, big.length).answer));
    t.deepEqual(again.map((a) => a?.status), [200, 200], 'the address has its 2 MiB back');
  });
}

test(`${transportKinds()[0]!.name} - gateway body budget - chunked bodies count as their bytes arrive; the one that passes the address's budget is 503`, async (t) => {
  const limits = { maxBodyBytes: MiB, maxBodyBytesInFlightPerAddress: 2 * MiB };
  const { gateway } = await workerAndGateway(t, transportKinds()[0]!, { limits });
  const big = paddedCall(1, MiB);
  const sent = 900 * 1024;
  const held = [stalledPost(gateway.url, '127.0.0.24', big, sent, true, 20_000), stalledPost(gateway.url, '127.0.0.24', big, sent, true, 20_000)];
  t.teardown(() => held.forEach((h) => h.req.destroy()));
  await pause(300);
  // 1.8 MiB held: a third chunked body is read until it passes 2 MiB, then refused.
  const third = stalledPost(gateway.url, '127.0.0.24', big, 300 * 1024, true);
  const answer = await third.answer;
  t.is(answer?.status, 503);
  t.is(answer?.retryAfter, '1');
  // The first two complete and are served.
  held.forEach((h) => h.req.end(big.slice(sent)));
  for (const h of held) t.regex((await h.answer)?.text ?? '', /<int>1<\/int>/);
});
