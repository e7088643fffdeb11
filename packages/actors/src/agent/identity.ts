/**
 * A worker's keys: an Ed25519 pair that signs its membership messages, and
 * an X25519 pair from which each pair of workers derives the keys of the MACs
 * on their calls without a round trip. Made fresh by every agent (a restarted
 * worker is a new instance with new keys); the public halves travel in its
 * announcements. See docs/rpc.md, "Who sent it".
 * @module
 */
import { createHmac, createPublicKey, diffieHellman, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';

/** Public keys travel as base64url of their 32 raw bytes. */
const KEY_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** Ed25519 signatures: base64url of 64 bytes. */
const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{86}$/;
/** Public keys of peers kept decoded; a bound on what announcements can make this worker hold. */
const MAX_CACHED_KEYS = 4096;

/** True when `value` has the form of a public key. */
export const isPublicKey = (value: unknown): value is string => typeof value === 'string' && KEY_PATTERN.test(value);

/** One worker's key pairs. */
export class Identity {
  /** Ed25519 public key (base64url). */
  readonly signKey: string;
  /** X25519 public key (base64url). */
  readonly dhKey: string;
  private readonly signPrivate: KeyObject;
  private readonly dhPrivate: KeyObject;
  private readonly decoded = new Map<string, KeyObject>();

  constructor() {
    const signing = generateKeyPairSync('ed25519');
    const agreement = generateKeyPairSync('x25519');
    this.signPrivate = signing.privateKey;
    this.dhPrivate = agreement.privateKey;
    this.signKey = signing.publicKey.export({ format: 'jwk' }).x!;
    this.dhKey = agreement.publicKey.export({ format: 'jwk' }).x!;
  }

  /** The Ed25519 private key, for this worker's beacon thread, which signs its heartbeats (heartbeat-beat.ts). */
  get signingKey(): KeyObject {
    return this.signPrivate;
  }

  /** Signs `text` with this worker's Ed25519 key. */
  sign(text: string): string {
    return sign(null, Buffer.from(text), this.signPrivate).toString('base64url');
  }

  /** True when `signature` is `publicKey`'s signature of `text`; false for anything malformed. */
  verify(publicKey: unknown, text: string, signature: unknown): boolean {
    if (!isPublicKey(publicKey) || typeof signature !== 'string' || !SIGNATURE_PATTERN.test(signature)) return false;
    try {
      return verify(null, Buffer.from(text), this.publicKey('Ed25519', publicKey), Buffer.from(signature, 'base64url'));
    } catch {
      return false;
    }
  }

  /**
   * The key of MACs on messages from `from` to `to`, where the other one's
   * X25519 public key is `peerDhKey`: both ends compute the same one.
   */
  pairKey(from: string, to: string, peerDhKey: string): Buffer {
    const shared = diffieHellman({ privateKey: this.dhPrivate, publicKey: this.publicKey('X25519', peerDhKey) });
    return createHmac('sha256', shared).update(`tensorbus call mac\0${from}\0${to}`).digest();
  }

  private publicKey(curve: 'Ed25519' | 'X25519', x: string): KeyObject {
    const id = `${curve}:${x}`;
    let key = this.decoded.get(id);
    if (!key) {
      key = createPublicKey({ key: { kty: 'OKP', crv: curve, x }, format: 'jwk' });
      if (this.decoded.size >= MAX_CACHED_KEYS) this.decoded.delete(this.decoded.keys().next().value!);
      this.decoded.set(id, key);
    }
    return key;
  }
}
