/**
 * Shows who sent a call. Each call carries `meta.auth = [counter, mac]`: a
 * keyed function of the call's kind, function name and a counter per (caller,
 * callee), keyed by what the two workers' announced X25519 keys agree on. A
 * call's MAC is one AES-128 block, `AES(K, counter ‖ kind ‖ SHA-256(fn)[0..7))`
 * (a pseudorandom permutation of a block never sent twice is a MAC of that
 * block: ~1 µs, against ~4 µs for an HMAC, paid on both sides of every call);
 * a control message, whose MAC also covers its body, keeps
 * HMAC-SHA256 (first 16 bytes). The callee accepts `meta.from` as shown only when the
 * MAC checks with the key of the member of that name (or of that same instance
 * after it was declared failed: it may still be running), and the counter was not
 * seen before (a window of the last {@link WINDOW} counters: calls may arrive
 * out of order over a direct route and the bus). Anything else is an
 * unverified caller: served, never counted as a member. See docs/rpc.md.
 * @module
 */
import { aes128Block, bytesEqual, hmacSha256, sha256, type BlockCipher } from '../platform/crypto.js';
import type { Identity } from './identity.js';

/** How far behind the newest counter an older one may still arrive. */
export const WINDOW = 4096;
const MAC_BYTES = 16;
/** Pairs kept (members, and workers declared failed that may come back); the oldest go first. */
const MAX_PEERS = 8192;
/** Function-name digests kept (a bound on what callers' names make a worker hold); longer names are not kept. */
export const MAX_DIGESTS = 1024;
const MAX_DIGESTED_NAME = 256;
/** Bytes of a function name's SHA-256 that a call's block carries (after an 8-byte counter and a kind byte). */
const DIGEST_BYTES = 7;

/** What `meta.auth` carries: a counter and a MAC (16 bytes, msgpack `bin`: no text encoding on either side). */
export type CallAuthField = [number, Uint8Array];

/** Finds a member's announced X25519 key. */
export type DhKeyLookup = (name: string) => string | undefined;

interface PeerKeys {
  dhKey: string;
  /** HMAC keys (control messages). */
  send: Uint8Array;
  receive: Uint8Array;
  /** AES-128-ECB of one block, one reusable object per direction (calls). */
  sendBlock: BlockCipher;
  receiveBlock: BlockCipher;
  sent: number;
  newest: number;
  seen: Uint8Array;
}

/** The MACs of one worker's calls, both ways. */
export class CallAuth {
  /** Calls whose sender could not be shown (served as unverified). */
  unverified = 0;
  private readonly peers = new Map<string, PeerKeys>();
  /** The 16-byte block a call's MAC is the encryption of (filled per MAC: one MAC at a time). */
  private readonly block = new Uint8Array(16);
  private readonly blockView = new DataView(this.block.buffer);
  /** SHA-256 prefixes of function names (see {@link MAX_DIGESTS}). */
  private readonly digests = new Map<string, Uint8Array>();

  constructor(private readonly identity: Identity, private readonly self: string, private readonly dhKeyOf: DhKeyLookup) {}

  /**
   * The `meta.auth` of a call of `fn` to `to` (or, with `body`, of a control
   * message: its bytes are covered too); undefined when `to`'s keys are not
   * known (not a member yet).
   */
  seal(to: string, kind: number, fn: string, body?: Uint8Array): CallAuthField | undefined {
    const peer = this.peer(to);
    if (!peer) return undefined;
    const counter = ++peer.sent;
    return [counter, body ? mac(peer.send, kind, fn, counter, body) : this.blockMac(peer.sendBlock, kind, fn, counter)];
  }

  /** True when `auth` shows that the call of `fn` (or control message `body`) came from member `from`; records its counter. */
  check(from: string, kind: number, fn: string, auth: unknown, body?: Uint8Array): boolean {
    const shown = this.verify(from, kind, fn, auth, body);
    if (!shown) this.unverified++;
    return shown;
  }

  /** Forgets `name`'s keys and counters (it left or failed). */
  forget(name: string): void {
    this.peers.delete(name);
  }

  private verify(from: string, kind: number, fn: string, auth: unknown, body: Uint8Array | undefined): boolean {
    if (!Array.isArray(auth) || auth.length !== 2) return false;
    const [counter, tag] = auth as [unknown, unknown];
    if (!Number.isSafeInteger(counter) || (counter as number) < 1 || !(tag instanceof Uint8Array) || tag.byteLength !== MAC_BYTES) return false;
    const peer = this.peer(from);
    if (!peer) return false;
    const c = counter as number;
    if (c <= peer.newest - WINDOW || (c <= peer.newest && peer.seen[c % WINDOW] === 1)) return false;
    if (!Number.isInteger(kind) || kind < 0 || kind > 255) return false;
    const expected = body ? mac(peer.receive, kind, fn, c, body) : this.blockMac(peer.receiveBlock, kind, fn, c);
    if (!bytesEqual(expected, tag)) return false;
    if (c > peer.newest) {
      // Slots between the old newest and this one are counters not seen yet.
      for (let k = Math.max(peer.newest + 1, c - WINDOW + 1); k < c; k++) peer.seen[k % WINDOW] = 0;
      peer.newest = c;
    }
    peer.seen[c % WINDOW] = 1;
    return true;
  }

  private peer(name: string): PeerKeys | undefined {
    // A worker's calls to itself have a key too (its own two keys agree on one): a claim of its name is shown like any other.
    const dhKey = this.dhKeyOf(name);
    if (dhKey === undefined) return undefined;
    let peer = this.peers.get(name);
    if (!peer || peer.dhKey !== dhKey) {
      // A new instance of `name` (new keys): counters start again.
      const send = this.identity.pairKey(this.self, name, dhKey);
      const receive = this.identity.pairKey(name, this.self, dhKey);
      peer = {
        dhKey,
        send,
        receive,
        sendBlock: blockCipher(send),
        receiveBlock: blockCipher(receive),
        sent: 0,
        newest: 0,
        seen: new Uint8Array(WINDOW),
      };
      if (this.peers.size >= MAX_PEERS) this.peers.delete(this.peers.keys().next().value!);
      this.peers.set(name, peer);
    }
    return peer;
  }

  /**
   * The MAC of a call: the block `counter (8 bytes) ‖ kind (1) ‖ SHA-256(fn)
   * (first 7)` encrypted with the pair's AES key. Every field has a fixed
   * place, so two different (counter, kind, name digest) never make the same block.
   */
  private blockMac(cipher: BlockCipher, kind: number, fn: string, counter: number): Uint8Array {
    const block = this.block;
    this.blockView.setUint32(0, Math.floor(counter / 2 ** 32));
    this.blockView.setUint32(4, counter >>> 0);
    block[8] = kind;
    block.set(this.digestOf(fn), 9);
    // A fresh buffer per MAC (the cipher allocates its output): the field owns it.
    const out = cipher(block);
    // ECB without padding turns each whole block into one block at once; anything else is a broken cipher.
    if (out.byteLength !== MAC_BYTES) throw new Error('AES block cipher returned a partial block');
    return out;
  }

  private digestOf(fn: string): Uint8Array {
    let digest = this.digests.get(fn);
    if (digest === undefined) {
      digest = sha256(fn).subarray(0, DIGEST_BYTES);
      if (fn.length <= MAX_DIGESTED_NAME) {
        if (this.digests.size >= MAX_DIGESTS) this.digests.delete(this.digests.keys().next().value!);
        this.digests.set(fn, digest);
      }
    }
    return digest;
  }

  /** Function-name digests held now (for tests: bounded by {@link MAX_DIGESTS}). */
  get digestsHeld(): number {
    return this.digests.size;
  }
}

/** One direction's AES-128 key (derived from its HMAC key, for this use only) as a reusable one-block cipher. */
function blockCipher(pairKey: Uint8Array): BlockCipher {
  return aes128Block(hmacSha256(pairKey, 'tensorbus call block key').subarray(0, 16));
}

function mac(key: Uint8Array, kind: number, fn: string, counter: number, body: Uint8Array | undefined): Uint8Array {
  const head = `${kind}\0${fn}\0${counter}`;
  const digest = body ? hmacSha256(key, head, `\0${body.byteLength}\0`, body) : hmacSha256(key, head);
  return digest.subarray(0, MAC_BYTES);
}
