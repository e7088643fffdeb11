/**
 * What a hostile request body, or a hostile result, costs the gateway: a
 * `<double>` built to make the pattern backtrack, a body of millions of
 * elements, method names that are not methods, a `__proto__` member, a
 * result larger than the gateway writes, RRefs past a value that cannot be
 * written. Each gets its fault, fast, and leaves nothing held.
 */
import test from 'ava';
import { performance } from 'node:perf_hooks';
import { tf } from '@tensorbus/core';
import { FAULT_CODES } from '../src/index.js';
import { eventually, rrefsReleased, transportKinds } from './helpers.js';
import { callBody, faultCodeOf, post, workerAndGateway } from './gateway-helpers.js';

const int = (n: number) => `<value><int>${n}</int></value>`;
const first = transportKinds()[0]!;

/** Posts `body` and resolves with the answer and how long it took, ms. */
async function timed(url: string, body: string): Promise<{ text: string; ms: number }> {
  const started = performance.now();
  const { text } = await post(url, body);
  return { text, ms: performance.now() - started };
}

test.serial(`${first.name} - gateway hostile values - 100,000 digits that are not a <double> are refused as fast as a string of them is echoed (the pattern does not backtrack quadratically)`, async (t) => {
  const { gateway } = await workerAndGateway(t, first);
  const digits = '1'.repeat(100_000);
  // The same bytes as a string, there and back: what the machine takes for this body right now.
  const baseline = await timed(gateway.url, callBody('w1.gw.echo', `<value><string>${digits}</string></value>`));
  t.true(baseline.text.includes(digits));
  const { text, ms } = await timed(gateway.url, callBody('w1.gw.echo', `<value><double>${digits}x</double></value>`));
  t.is(faultCodeOf(text), FAULT_CODES.INVALID_ARGUMENT, text.slice(0, 300));
  t.log(`string echoed: ${baseline.ms.toFixed(0)} ms; double refused: ${ms.toFixed(0)} ms`);
  // The quadratic pattern took about 20 s for a fifth of these digits (minutes for all); a linear one milliseconds.
  t.true(ms < 3 * baseline.ms + 1_000, `refused in ${ms.toFixed(0)} ms; the string was echoed in ${baseline.ms.toFixed(0)} ms`);
  t.regex((await post(gateway.url, callBody('w1.gw.echo', '<value><double>-1.5e3</double></value>'))).text, /<int>-1500<\/int>/);
});

test.serial(`${first.name} - gateway hostile values - 8 MiB of empty elements is refused before it is parsed, as fast as a body refused unparsed`, async (t) => {
  const { gateway } = await workerAndGateway(t, first);
  const head = '<?xml version="1.0"?><methodCall><methodName>w1.gw.echo</methodName><params><param><value><array><data>';
  const tail = '</data></array></value></param></params></methodCall>';
  const size = 8 * 1024 * 1024 - head.length - tail.length;
  // A body of the same size refused before parsing (it declares a DTD at its end): what reading and scanning 8 MiB take right now.
  const declared = await timed(gateway.url, `${head}${' '.repeat(size - 12)}<!DOCTYPE x>${tail}`);
  t.is(faultCodeOf(declared.text), FAULT_CODES.GATEWAY_BAD_REQUEST, declared.text.slice(0, 300));
  const empty = await timed(gateway.url, head + '<a/>'.repeat(Math.floor(size / 4)) + tail);
  t.is(faultCodeOf(empty.text), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED, empty.text.slice(0, 300));
  t.regex(empty.text, /more than \d+ elements/);
  t.log(`8 MiB refused unparsed: ${declared.ms.toFixed(0)} ms; 8 MiB of <a/>: ${empty.ms.toFixed(0)} ms`);
  // Parsing 2 million elements took about 4.8 s; counting them takes tens of milliseconds.
  t.true(empty.ms < 3 * declared.ms + 1_000, `refused in ${empty.ms.toFixed(0)} ms; a body refused unparsed in ${declared.ms.toFixed(0)} ms`);
  t.regex((await post(gateway.url, callBody('w1.gw.echo', int(42)))).text, /<int>42<\/int>/);
});

test.serial(`${first.name} - gateway hostile values - 8 MiB of text in one node costs about what a body refused unparsed costs (the parser never copies text a character at a time)`, async (t) => {
  const { gateway } = await workerAndGateway(t, first);
  const head = '<?xml version="1.0"?><methodCall><methodName>w1.gw.echo</methodName><params><param><value><int>';
  const tail = '</int></value></param></params></methodCall>';
  const size = 8 * 1024 * 1024 - head.length - tail.length;
  const declared = await timed(gateway.url, `${head}${' '.repeat(size - 12)}<!DOCTYPE x>${tail}`);
  t.is(faultCodeOf(declared.text), FAULT_CODES.GATEWAY_BAD_REQUEST, declared.text.slice(0, 300));
  // Parsed, then refused as a value: the parser copied 8 MiB a character at a time, about 7 s.
  const digits = await timed(gateway.url, head + '7'.repeat(size) + tail);
  t.is(faultCodeOf(digits.text), FAULT_CODES.INVALID_ARGUMENT, digits.text.slice(0, 300));
  t.regex(digits.text, /&lt;int&gt; holds no integer/);
  // A tag as long, which the parser also reads a character at a time, is refused before parsing.
  const tag = await timed(gateway.url, `${head}<a${' x'.repeat(size / 2 - 4)}/>${tail}`);
  t.is(faultCodeOf(tag.text), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED, tag.text.slice(0, 300));
  t.log(`8 MiB refused unparsed: ${declared.ms.toFixed(0)} ms; 8 MiB of digits: ${digits.ms.toFixed(0)} ms; an 8 MiB tag: ${tag.ms.toFixed(0)} ms`);
  t.true(digits.ms < 3 * declared.ms + 1_000, `refused in ${digits.ms.toFixed(0)} ms; a body refused unparsed in ${declared.ms.toFixed(0)} ms`);
  t.true(tag.ms < 3 * declared.ms + 1_000, `refused in ${tag.ms.toFixed(0)} ms; a body refused unparsed in ${declared.ms.toFixed(0)} ms`);
});

test.serial(`${first.name} - gateway hostile values - long text around comments, CDATA and references comes back exactly; a control character XML forbids, or a bare &, is refused`, async (t) => {
  const { gateway } = await workerAndGateway(t, first);
  const long = (c: string) => c.repeat(40);
  const sent = `${long('x')} &lt;&amp;&gt;&#65;&#x42; ${long('y')}<!-- ${long('c')} -->${long('z')}<![CDATA[${long('<')}]]>${long('w')}`;
  const echoed = await post(gateway.url, callBody('w1.gw.echo', `<value><string>${sent}</string></value>`));
  t.is(/<string>([^]*)<\/string>/.exec(echoed.text)?.[1], `${long('x')} &lt;&amp;&gt;AB ${long('y')}${long('z')}${long('&lt;')}${long('w')}`);
  // Long whitespace around the root element (as pretty printers write it) is still accepted.
  const spaced = callBody('w1.gw.echo', int(9)).replace('<methodCall>', `\n${' '.repeat(40)}<methodCall>`) + `\n${' '.repeat(40)}`;
  t.regex((await post(gateway.url, spaced)).text, /<int>9<\/int>/);
  const trailing = await post(gateway.url, `${callBody('w1.gw.echo', int(9))}${long('t')}`);
  t.is(faultCodeOf(trailing.text), FAULT_CODES.GATEWAY_BAD_REQUEST, 'text after the root element is still refused');
  const control = await post(gateway.url, callBody('w1.gw.echo', `<value><string>${long('x')}\u0001${long('y')}</string></value>`));
  t.is(faultCodeOf(control.text), FAULT_CODES.GATEWAY_BAD_REQUEST, control.text);
  t.regex(control.text, /U\+0001/);
  for (const text of [`${long('x')} & ${long('y')}`, 'a & b']) {
    const ampersand = await post(gateway.url, callBody('w1.gw.echo', `<value><string>${text}</string></value>`));
    t.is(faultCodeOf(ampersand.text), FAULT_CODES.GATEWAY_BAD_REQUEST, ampersand.text);
  }
});

for (const kind of transportKinds('without-tcp')) {
  test(`${kind.name} - gateway hostile values - rref.call of then, constructor, toJSON is UNKNOWN_FUNCTION without the gateway's source text`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind);
    const made = await post(gateway.url, callBody('w1.gw.Counter', int(1)));
    const handle = /<string>(rref-[^<]+)<\/string>/.exec(made.text)![1]!;
    for (const method of ['then', 'constructor', 'toJSON', 'catch', 'no such name!']) {
      const { text } = await post(gateway.url, callBody('rref.call', `<value>${handle}</value>`, `<value>${method}</value>`, '<value><array><data/></array></value>'));
      t.is(faultCodeOf(text), FAULT_CODES.UNKNOWN_FUNCTION, `${method}: ${text}`);
      t.notRegex(text, /rpcSync|=>|is not a function|TypeError/, method);
    }
    t.regex((await post(gateway.url, callBody('rref.call', `<value>${handle}</value>`, '<value>inc</value>', `<value><array><data>${int(2)}</data></array></value>`))).text, /<int>3<\/int>/);
    await post(gateway.url, callBody('rref.release', `<value>${handle}</value>`));
    await rrefsReleased(workers);
    t.pass();
  });

  test(`${kind.name} - gateway hostile values - a struct member named __proto__ is refused with a clear fault; constructor round-trips; no prototype is polluted`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind);
    const struct = (name: string) => `<value><struct><member><name>${name}</name><value><struct><member><name>polluted</name><value><int>1</int></value></member></struct></value></member></struct></value>`;
    const proto = await post(gateway.url, callBody('w1.gw.echo', struct('__proto__')));
    t.is(faultCodeOf(proto.text), FAULT_CODES.INVALID_ARGUMENT, proto.text);
    t.regex(proto.text, /__proto__/);
    const ctor = await post(gateway.url, callBody('w1.gw.echo', struct('constructor')));
    t.regex(ctor.text, /<member><name>constructor<\/name><value><struct><member><name>polluted<\/name><value><int>1<\/int>/);
    t.is(({} as Record<string, unknown>).polluted, undefined);
  });

  test.serial(`${kind.name} - gateway hostile values - a result past maxResultBytes is refused with GATEWAY_LIMIT_EXCEEDED before it is encoded; its tensor is let go`, async (t) => {
    const { gateway } = await workerAndGateway(t, kind, { limits: { maxResultBytes: 1024 * 1024 } });
    const before = tf.memory().numTensors;
    const shape = (n: number) => `<value><array><data>${int(n)}</data></array></value>`;
    const big = await post(gateway.url, callBody('w1.tf.ones', shape(300_000)));
    t.is(faultCodeOf(big.text), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED, big.text.slice(0, 300));
    t.regex(big.text, /maxResultBytes/);
    const bytes = await post(gateway.url, callBody('w1.gw.echo', `<value><base64>${Buffer.alloc(900_000).toString('base64')}</base64></value>`));
    t.is(faultCodeOf(bytes.text), FAULT_CODES.GATEWAY_LIMIT_EXCEEDED, 'bytes are counted as the base64 they become');
    t.regex((await post(gateway.url, callBody('w1.tf.ones', shape(1000)))).text, /<name>data<\/name><value><base64>/);
    await eventually(() => tf.memory().numTensors === before).catch(() => undefined);
    t.is(tf.memory().numTensors, before);
  });

  test(`${kind.name} - gateway hostile values - every RRef of a result that cannot be written is let go, those past the failing value too`, async (t) => {
    const { gateway, workers } = await workerAndGateway(t, kind);
    const answer = await post(gateway.url, callBody('w1.gw.badStringThenRefs', int(50)));
    t.is(faultCodeOf(answer.text), FAULT_CODES.SERIALIZATION);
    t.is(gateway.handleCount('anonymous:127.0.0.1'), 0);
    // Without a garbage collection: the 50 RRefs are released, not left to GC.
    await rrefsReleased(workers, 5_000);
    t.pass();
  });
}
