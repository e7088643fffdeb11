/**
 * A worker's keys: an Ed25519 pair that signs its membership messages, and
 * an X25519 pair from which each pair of workers derives the keys of the MACs
 * on their calls without a round trip. Made fresh by every agent (a restarted
 * worker is a new instance with new keys); the public halves travel in its
 * announcements. See docs/rpc.md, "Who sent it".
 * @module
 */
import { agree, generateKeyPair, hmacSha256, signText, verifyText, type PrivateKey } from '../platform/crypto.js';

/** Public keys travel as base64url of their 32 raw bytes. */
const KEY_PATTERN = /^[A-Za-z0-9_-]{43}$/;
/** Ed25519 signatures: base64url of 64 bytes. */
const SIGNATURE_PATTERN = /^[A-Za-z0-9_-]{86}$/;

/** True when `value` has the form of a public key. */
export const isPublicKey = (value: unknown): value is string => typeof value === 'string' && KEY_PATTERN.test(value);

/** One worker's key pairs. */
export class Identity {
  /** Ed25519 public key (base64url). */
  readonly signKey: string;
  /** X25519 public key (base64url). */
  readonly dhKey: string;
  private readonly signPrivate: PrivateKey;
  private readonly dhPrivate: PrivateKey;

  constructor() {
    const signing = generateKeyPair('ed25519');
    const agreement = generateKeyPair('x25519');
    this.signPrivate = signing.privateKey;
    this.dhPrivate = agreement.privateKey;
    this.signKey = signing.publicKey;
    this.dhKey = agreement.publicKey;
  }

  /** The Ed25519 private key, for this worker's beacon thread, which signs its heartbeats (heartbeat-beat.ts). */
  get signingKey(): PrivateKey {
    return this.signPrivate;
  }

  /** Signs `text` with this worker's Ed25519 key. */
  sign(text: string): string {
    return signText(this.signPrivate, text);
  }

  /** True when `signature` is `publicKey`'s signature of `text`; false for anything malformed. */
  verify(publicKey: unknown, text: string, signature: unknown): boolean {
    if (!isPublicKey(publicKey) || typeof signature !== 'string' || !SIGNATURE_PATTERN.test(signature)) return false;
    return verifyText(publicKey, text, signature);
  }

  /**
   * The key of MACs on messages from `from` to `to`, where the other one's
   * X25519 public key is `peerDhKey`: both ends compute the same one.
   */
  pairKey(from: string, to: string, peerDhKey: string): Uint8Array {
    return hmacSha256(agree(this.dhPrivate, peerDhKey), `tensorbus call mac\0${from}\0${to}`);
  }
}
