/**
 * The browser twin of the worker's cryptography (platform/crypto.browser.ts,
 * on the noble libraries) against Node's (platform/crypto.ts, node:crypto):
 * a tab and a Node worker must verify each other, so keys, signatures,
 * shared secrets, MACs and AES blocks are the same bytes on both sides.
 */
import test from 'ava';
import * as browser from '../src/platform/crypto.browser.js';
import * as node from '../src/platform/crypto.js';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

test('platform crypto - Ed25519: each side verifies the other\'s signatures; a changed text, a foreign key or a malformed signature is refused', (t) => {
  const fromNode = node.generateKeyPair('ed25519');
  const fromPage = browser.generateKeyPair('ed25519');
  for (const pair of [fromNode, fromPage]) t.regex(pair.publicKey, /^[A-Za-z0-9_-]{43}$/);
  const text = 'hello\0tab\0ünïcode';
  const byNode = node.signText(fromNode.privateKey, text);
  const byPage = browser.signText(fromPage.privateKey, text);
  t.true(browser.verifyText(fromNode.publicKey, text, byNode), 'the page verifies Node');
  t.true(node.verifyText(fromPage.publicKey, text, byPage), 'Node verifies the page');
  t.false(browser.verifyText(fromNode.publicKey, `${text}!`, byNode));
  t.false(node.verifyText(fromPage.publicKey, `${text}!`, byPage));
  t.false(browser.verifyText(fromPage.publicKey, text, byNode), 'another key');
  t.false(node.verifyText(fromNode.publicKey, text, byPage), 'another key');
  for (const bad of ['', 'not base64url!', byPage.slice(0, 40), `${byPage}AA`]) {
    t.false(browser.verifyText(fromNode.publicKey, text, bad), `page: ${bad}`);
    t.false(node.verifyText(fromNode.publicKey, text, bad), `node: ${bad}`);
  }
  t.false(browser.verifyText('A'.repeat(42), text, byNode), 'a malformed key');
});

test('platform crypto - X25519: a Node worker and a tab agree on the same secret', (t) => {
  const a = node.generateKeyPair('x25519');
  const b = browser.generateKeyPair('x25519');
  const onNode = node.agree(a.privateKey, b.publicKey);
  const onPage = browser.agree(b.privateKey, a.publicKey);
  t.is(onNode.byteLength, 32);
  t.is(hex(onPage), hex(onNode));
  t.throws(() => browser.agree(b.privateKey, 'AAAA'), { instanceOf: TypeError });
});

test('platform crypto - HMAC-SHA256, SHA-256, one-block AES-128 and base64url are the same bytes on both sides', (t) => {
  const key = browser.fillRandom(new Uint8Array(32));
  const body = browser.fillRandom(new Uint8Array(1000));
  t.is(hex(browser.hmacSha256(key, 'a\0b', body, '')), hex(node.hmacSha256(key, 'a\0b', body, '')));
  t.is(hex(browser.sha256('tb.fn.name')), hex(node.sha256('tb.fn.name')));
  t.is(hex(browser.sha256(body)), hex(node.sha256(body)));
  const aesKey = key.subarray(0, 16);
  const onPage = browser.aes128Block(aesKey);
  const onNode = node.aes128Block(aesKey);
  // One cipher serves many blocks (every call of a pair), each the same as Node's.
  for (let i = 0; i < 4; i++) {
    const block = browser.fillRandom(new Uint8Array(16));
    t.is(hex(onPage(block)), hex(onNode(block)), `block ${i}`);
  }
  for (const size of [0, 1, 2, 3, 16, 17, 100]) {
    const bytes = body.subarray(0, size);
    t.is(browser.toBase64url(bytes), node.toBase64url(bytes), `${size} bytes`);
  }
});

test('platform crypto - constant-time equality, random fill beyond one getRandomValues call (64 KiB), random UUIDs', (t) => {
  t.true(browser.bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2])));
  t.false(browser.bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3])));
  t.false(browser.bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3])));
  t.false(node.bytesEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3])), 'Node\'s too: different lengths are unequal, not a throw');
  const big = browser.fillRandom(new Uint8Array(200_000));
  t.true(big.subarray(150_000).some((byte) => byte !== 0), 'the last part is filled too');
  t.regex(browser.randomUuid(), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});
