/**
 * The checkpoint contract of supervised objects (docs/supervision.md): a
 * class whose instances have both `checkpoint()` (their state as named
 * tensors and JSON values) and `restore(state)` has its state saved by its
 * owner after each method call a holder made, before the reply, in the
 * worker's checkpoint store (`initRpc({ checkpoints })`, e.g. the JetStream
 * `checkpointStore` of @tensorbus/nats-transport); when a restarted owner
 * makes the object again, the constructor runs with the same arguments and
 * then `restore()` gets the last state saved. A checkpoint the store refuses
 * (truncated, reshaped, written by another account) is not restored: the
 * object starts fresh from its constructor, and the owner says so.
 * @module
 */
import { sha256 } from '../platform/crypto.js';
import { disposeTransient } from '../tensors.js';

/** Where supervised objects' checkpoints are kept (the JetStream `checkpointStore` fits). */
export interface ObjectCheckpointStore {
  /** Saves `entries` (tensors and JSON values) under `key`, replacing what was there. */
  save(key: string, entries: Record<string, unknown>): Promise<void>;
  /** The entries under `key`, undefined when none; rejects when they cannot be trusted. */
  load(key: string): Promise<Record<string, unknown> | undefined>;
  /** Removes the checkpoint under `key` (called when the object is dropped: its state ends with it). */
  delete?(key: string): Promise<void>;
}

/** What a class implements for its supervised instances' state to survive their owner's restart. */
export interface Checkpointable {
  /** The state to keep: named tensors and JSON values (the tensors stay the instance's). */
  checkpoint(): Record<string, unknown> | Promise<Record<string, unknown>>;
  /** Takes back a state `checkpoint()` gave (its tensors are the instance's now). */
  restore(state: Record<string, unknown>): void | Promise<void>;
}

/** True when `value` implements {@link Checkpointable}. */
export function isCheckpointable(value: unknown): value is Checkpointable {
  const v = value as Partial<Checkpointable> | null;
  return v !== null && typeof v === 'object' && typeof v.checkpoint === 'function' && typeof v.restore === 'function';
}

/** The store key of RRef `rrefId`'s object: a digest (names may hold characters a key may not). */
export function checkpointKey(rrefId: string): string {
  return `tensorbus.object.${Array.from(sha256(rrefId), (byte) => byte.toString(16).padStart(2, '0')).join('').slice(0, 40)}`;
}

/** Saves `value`'s state under its RRef's key. */
export async function saveObject(store: ObjectCheckpointStore, value: Checkpointable, rrefId: string): Promise<void> {
  const state = await value.checkpoint();
  if (state === null || typeof state !== 'object') throw new TypeError(`checkpoint() of RRef ${rrefId}'s object returned no object`);
  await store.save(checkpointKey(rrefId), state);
}

/**
 * Restores `value` from its RRef's last checkpoint. Returns what happened, for
 * the owner's log: restored, none saved yet, or refused (the object then keeps
 * the state its constructor gave it).
 */
export async function restoreObject(store: ObjectCheckpointStore, value: Checkpointable, rrefId: string): Promise<'restored' | 'none' | Error> {
  let state: Record<string, unknown> | undefined;
  try {
    state = await store.load(checkpointKey(rrefId));
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
  if (state === undefined) return 'none';
  try {
    await value.restore(state);
  } catch (error) {
    disposeTransient(state);
    return error instanceof Error ? error : new Error(String(error));
  }
  return 'restored';
}
