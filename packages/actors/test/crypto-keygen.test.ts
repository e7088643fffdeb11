/**
 * Key generation under garbage collection (platform/crypto.ts): every worker
 * makes an Ed25519 and an X25519 pair at start. Exporting a fresh key as JWK
 * could deadlock Node 20 when a collection fell inside the export (a worker
 * hung for good at start); tens of thousands of pairs made with the heap
 * churning, in a child process with a time limit, must all complete (the
 * JWK export hung within 40,000 Ed25519 pairs here, every time tried).
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { generateKeyPair, signText, verifyText } from '../src/platform/crypto.js';

const run = promisify(execFile);
const CRYPTO = new URL('../src/platform/crypto.js', import.meta.url).href;

test('crypto - a pair signs and verifies; the public key is the 32 raw bytes, base64url', (t) => {
  const pair = generateKeyPair('ed25519');
  t.is(Buffer.from(pair.publicKey, 'base64url').length, 32);
  t.true(verifyText(pair.publicKey, 'text', signText(pair.privateKey, 'text')));
  t.false(verifyText(generateKeyPair('ed25519').publicKey, 'text', signText(pair.privateKey, 'text')));
});

test('crypto - 40,000 Ed25519 and 10,000 X25519 pairs made while the heap churns all complete (no deadlock with the collector)', async (t) => {
  const source = `
    const { generateKeyPair } = await import(${JSON.stringify(CRYPTO)});
    for (let i = 0; i < 50000; i++) {
      generateKeyPair(i < 40000 ? 'ed25519' : 'x25519');
      if (i % 500 === 0) { const junk = []; for (let j = 0; j < 2000; j++) junk.push({ j }); }
    }
    console.log('done');
  `;
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', source], { timeout: 120_000 });
  t.is(stdout.trim(), 'done');
});
