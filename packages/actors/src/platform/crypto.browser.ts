/**
 * The browser twin of crypto.ts (a page's bundle takes it through the
 * package's "browser" field): the same functions, synchronous, on the noble
 * libraries (@noble/curves, @noble/hashes, @noble/ciphers) and the page's
 * `crypto.getRandomValues`, with Node's formats: raw 32-byte public keys and
 * 64-byte Ed25519 signatures in base64url, the same X25519 secret, HMAC and
 * AES block. See docs/browser.md.
 * @module
 */
import { ecb } from '@noble/ciphers/aes.js';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 as sha256Hash } from '@noble/hashes/sha2.js';

/** A private key: only the functions of this module read it. */
export type PrivateKey = object;

/** A fresh key pair; the public half is base64url of its 32 raw bytes. */
export interface KeyPair {
  readonly privateKey: PrivateKey;
  readonly publicKey: string;
}

/** A one-block cipher: the 16-byte encryption of a 16-byte block. */
export type BlockCipher = (block: Uint8Array) => Uint8Array;

const KEY_BYTES = 32;
const SIGNATURE_BYTES = 64;
const encoder = new TextEncoder();
const bytesOf = (data: string | Uint8Array): Uint8Array => (typeof data === 'string' ? encoder.encode(data) : data);

/** A fresh Ed25519 (signing) or X25519 (key agreement) pair. */
export function generateKeyPair(curve: 'ed25519' | 'x25519'): KeyPair {
  const scheme = curve === 'ed25519' ? ed25519 : x25519;
  const secret = fillRandom(new Uint8Array(KEY_BYTES));
  return { privateKey: secret, publicKey: toBase64url(scheme.getPublicKey(secret)) };
}

/** The Ed25519 signature of `text` (UTF-8) with `key`, base64url. */
export function signText(key: PrivateKey, text: string): string {
  return toBase64url(ed25519.sign(encoder.encode(text), key as Uint8Array));
}

/** True when `signature` (base64url) is `publicKey`'s Ed25519 signature of `text`; false for anything malformed. */
export function verifyText(publicKey: string, text: string, signature: string): boolean {
  try {
    const key = fromBase64url(publicKey);
    const sig = fromBase64url(signature);
    if (key.byteLength !== KEY_BYTES || sig.byteLength !== SIGNATURE_BYTES) return false;
    return ed25519.verify(sig, encoder.encode(text), key);
  } catch {
    return false;
  }
}

/** The X25519 shared secret of `privateKey` and the peer's `publicKey` (base64url). */
export function agree(privateKey: PrivateKey, publicKey: string): Uint8Array {
  const key = fromBase64url(publicKey);
  if (key.byteLength !== KEY_BYTES) throw new TypeError('an X25519 public key has 32 bytes');
  return x25519.getSharedSecret(privateKey as Uint8Array, key);
}

/** HMAC-SHA256 with `key` of `parts` (strings as UTF-8) one after the other. */
export function hmacSha256(key: Uint8Array, ...parts: (string | Uint8Array)[]): Uint8Array {
  const mac = hmac.create(sha256Hash, key);
  for (const part of parts) mac.update(bytesOf(part));
  return mac.digest();
}

/** SHA-256 of `data` (strings as UTF-8). */
export function sha256(data: string | Uint8Array): Uint8Array {
  return sha256Hash(bytesOf(data));
}

/**
 * AES-128 (ECB, no padding) of single blocks with `key` (16 bytes). A noble
 * cipher object encrypts once (it guards against reuse), so each block gets
 * one of its own: a key expansion per block, a few µs.
 */
export function aes128Block(key: Uint8Array): BlockCipher {
  const copy = key.slice();
  return (block) => ecb(copy, { disablePadding: true }).encrypt(block);
}

/** Constant-time equality of two byte strings of the same length (false for different lengths). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  let difference = 0;
  for (let i = 0; i < a.byteLength; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

/** Fills `bytes` from the page's secure random source. */
export function fillRandom(bytes: Uint8Array): Uint8Array {
  // getRandomValues fills at most 65,536 bytes a call.
  for (let at = 0; at < bytes.byteLength; at += 65536) crypto.getRandomValues(bytes.subarray(at, Math.min(at + 65536, bytes.byteLength)));
  return bytes;
}

/** A random version-4 UUID. */
export function randomUuid(): string {
  return crypto.randomUUID();
}

/** `bytes` as base64url (no padding). */
export function toBase64url(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.byteLength; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new TypeError('not base64url');
  const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
  return Uint8Array.from(binary, (char) => char.charCodeAt(0));
}
