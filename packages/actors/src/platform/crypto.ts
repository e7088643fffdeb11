/**
 * The cryptography a worker uses, on Node's `node:crypto`: Ed25519
 * signatures, X25519 key agreement, HMAC-SHA256, SHA-256, one-block AES-128
 * and random bytes. A page's bundle takes crypto.browser.ts instead (the
 * package's "browser" field), the same functions on the noble libraries with
 * the same formats, so a Node worker and a tab verify each other. See
 * docs/browser.md.
 * @module
 */
import { createCipheriv, createHash, createHmac, createPublicKey, diffieHellman, generateKeyPairSync, randomFillSync, randomUUID, sign, verify, type KeyObject } from 'node:crypto';

/** A private key: only the functions of this module read it. */
export type PrivateKey = object;

/** A fresh key pair; the public half is base64url of its 32 raw bytes. */
export interface KeyPair {
  readonly privateKey: PrivateKey;
  readonly publicKey: string;
}

/** A one-block cipher: the 16-byte encryption of a 16-byte block. */
export type BlockCipher = (block: Uint8Array) => Uint8Array;

/** Public keys of peers kept decoded; a bound on what announcements can make this process hold. */
const MAX_CACHED_KEYS = 4096;
const decoded = new Map<string, KeyObject>();

/** Bytes of an Ed25519 or X25519 public key, the last part of its SPKI DER encoding (after a fixed 12-byte header). */
const RAW_KEY_BYTES = 32;

/**
 * A fresh Ed25519 (signing) or X25519 (key agreement) pair. The public key
 * comes encoded from the generation itself: exporting the fresh KeyObject as
 * JWK can deadlock Node 20 (the export holds the key's mutex while it
 * allocates; a garbage collection then destroys the generation job, which
 * takes the same mutex).
 */
export function generateKeyPair(curve: 'ed25519' | 'x25519'): KeyPair {
  const pair = generateKeyPairSync(curve as 'ed25519', { publicKeyEncoding: { format: 'der', type: 'spki' } });
  return { privateKey: pair.privateKey, publicKey: (pair.publicKey as unknown as Buffer).subarray(-RAW_KEY_BYTES).toString('base64url') };
}

/** The Ed25519 signature of `text` (UTF-8) with `key`, base64url. */
export function signText(key: PrivateKey, text: string): string {
  return sign(null, Buffer.from(text), key as KeyObject).toString('base64url');
}

/** True when `signature` (base64url) is `publicKey`'s Ed25519 signature of `text`; false for anything malformed. */
export function verifyText(publicKey: string, text: string, signature: string): boolean {
  try {
    return verify(null, Buffer.from(text), publicKeyObject('Ed25519', publicKey), Buffer.from(signature, 'base64url'));
  } catch {
    return false;
  }
}

/** The X25519 shared secret of `privateKey` and the peer's `publicKey` (base64url). */
export function agree(privateKey: PrivateKey, publicKey: string): Uint8Array {
  return diffieHellman({ privateKey: privateKey as KeyObject, publicKey: publicKeyObject('X25519', publicKey) });
}

/** HMAC-SHA256 with `key` of `parts` (strings as UTF-8) one after the other. */
export function hmacSha256(key: Uint8Array, ...parts: (string | Uint8Array)[]): Uint8Array {
  const hmac = createHmac('sha256', key);
  for (const part of parts) hmac.update(part);
  return hmac.digest();
}

/** SHA-256 of `data` (strings as UTF-8). */
export function sha256(data: string | Uint8Array): Uint8Array {
  return createHash('sha256').update(data).digest();
}

/** AES-128 (ECB, no padding) of single blocks with `key` (16 bytes); one reusable cipher. */
export function aes128Block(key: Uint8Array): BlockCipher {
  const cipher = createCipheriv('aes-128-ecb', key, null);
  cipher.setAutoPadding(false);
  return (block) => cipher.update(block);
}

/**
 * Constant-time equality of two byte strings of the same length (false for
 * different lengths). A loop without an early exit, as in the browser: for
 * the 16-byte tags of calls it costs a fraction of `timingSafeEqual`'s call
 * into C++.
 */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  let difference = 0;
  for (let i = 0; i < a.byteLength; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

/** Fills `bytes` from the system's secure random source. */
export function fillRandom(bytes: Uint8Array): Uint8Array {
  return randomFillSync(bytes);
}

/** A random version-4 UUID. */
export function randomUuid(): string {
  return randomUUID();
}

/** `bytes` as base64url (no padding). */
export function toBase64url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url');
}

function publicKeyObject(curve: 'Ed25519' | 'X25519', x: string): KeyObject {
  const id = `${curve}:${x}`;
  let key = decoded.get(id);
  if (!key) {
    key = createPublicKey({ key: { kty: 'OKP', crv: curve, x }, format: 'jwk' });
    if (decoded.size >= MAX_CACHED_KEYS) decoded.delete(decoded.keys().next().value!);
    decoded.set(id, key);
  }
  return key;
}
