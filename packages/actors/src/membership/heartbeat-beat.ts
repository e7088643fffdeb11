/**
 * A worker's heartbeats as its beacon thread makes them (see
 * Transport.startBeacon): numbered from the counter the worker shares with
 * that thread, signed with the worker's key, framed as the codec frames a
 * value without tensors. This module runs on the beacon thread: it imports
 * neither TensorFlow.js nor the codec, only msgpackr and the platform's crypto (node:crypto).
 *
 * The shared memory (an Int32Array on a SharedArrayBuffer) is
 * `[SEQ, STATE, ID, BEATS]`: the sequence number of the worker's latest
 * announcement (both threads take numbers with `Atomics.add`, so no number
 * is used twice), where the worker is in its life (joining: beats are
 * `hello`; joined: `hb`; left: nothing), its current id, and how many beats
 * the beacon thread has made (the main thread does not beat while that
 * count moves: one beat per interval reaches the others, not two).
 * @module
 */
import { signText, type PrivateKey } from '../platform/crypto.js';
import { Packr } from 'msgpackr';

/** Index of the sequence counter in the shared memory. */
export const SEQ = 0;
/** Index of the worker's state ({@link JOINING}, {@link JOINED}, {@link LEFT}). */
export const STATE = 1;
/** Index of the worker's id. */
export const ID = 2;
/** Index of the count of beats the beacon thread made. */
export const BEATS = 3;
/** Elements of the shared memory. */
export const SHARED_LENGTH = 4;

/** Joining: a beat is a `hello` (a rival joiner of the name decides by instance id, as for the first one). */
export const JOINING = 0;
/** Joined: a beat is an `hb`. */
export const JOINED = 1;
/** Left (or leaving): no beat, so none follows the goodbye. */
export const LEFT = 2;

/** The fields an announcement's signature covers. */
export type SignedFields = {
  /** The kind of announcement. */
  k: string;
  /** The worker's name, id (-1 while it has none) and instance. */
  n: string;
  id: number;
  inst: string;
  /** When the instance started (ms since the epoch). */
  t: number;
  /** Sequence number of the sender's announcements (its instance's), from 1. */
  q: number;
  /** The sender's Ed25519 and X25519 public keys. */
  sk: string;
  xk: string;
};

/** What an announcement's signature covers. */
export function signedText(m: SignedFields): string {
  return `tensorbus member\0${m.k}\0${m.n}\0${m.id}\0${m.inst}\0${m.t}\0${m.q}\0${m.sk}\0${m.xk}`;
}

/** The fixed part of a worker's beats, handed to the beacon thread once. */
export interface BeatData {
  n: string;
  inst: string;
  t: number;
  sk: string;
  xk: string;
  /** The worker's Ed25519 private key. */
  key: PrivateKey;
}

// The codec's options (codec.ts): a plain object packs to the same bytes.
const packr = new Packr({ useRecords: false, moreTypes: true, mapsAsObjects: true, variableMapSize: true, structuredClone: false, copyBuffers: true });

/** A frame of a value without tensors: the 8-byte header ("TB", version 1, no flags, envelope length LE), then the envelope (docs/wire-format.md). */
function frame(value: unknown): Uint8Array {
  const envelope = packr.pack(value);
  const out = new Uint8Array(8 + envelope.byteLength);
  out.set([0x54, 0x42, 0x01, 0x00]);
  new DataView(out.buffer).setUint32(4, envelope.byteLength, true);
  out.set(envelope, 8);
  return out;
}

/**
 * One heartbeat of the worker `data` describes, or undefined once it left;
 * the beacon thread asks for one only while its connection is up, so each
 * counts in BEATS as sent.
 * The state is read again after the number is taken: a goodbye sets LEFT
 * before it takes its own number, so a beat numbered after the goodbye sees
 * LEFT and is not sent, and one numbered before it is older than the
 * goodbye (receivers drop it if it comes later).
 */
export function beat(data: BeatData, shared: Int32Array): Uint8Array | undefined {
  if (Atomics.load(shared, STATE) === LEFT) return undefined;
  const q = Atomics.add(shared, SEQ, 1) + 1;
  const state = Atomics.load(shared, STATE);
  if (state === LEFT) return undefined;
  // Key order as the main thread's announcements (membership.ts `signed`).
  const message = { k: state === JOINING ? 'hello' : 'hb', n: data.n, id: Atomics.load(shared, ID), inst: data.inst, t: data.t, q, sk: data.sk, xk: data.xk } as SignedFields & { sig?: string };
  message.sig = signText(data.key, signedText(message));
  Atomics.add(shared, BEATS, 1);
  return frame(message);
}
