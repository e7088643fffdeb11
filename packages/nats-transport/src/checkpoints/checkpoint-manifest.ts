/**
 * A checkpoint's manifest: the record kept in the KV bucket under the
 * checkpoint's key. Plain values are in it; each tensor is named by its
 * object in the Object Store with its dtype, shape, size and SHA-256. The
 * manifest is signed (HMAC-SHA256) with the store's secret over its account,
 * key and entries, so a checkpoint written by another account, or changed
 * since, is refused. Everything read is checked here before it is used.
 * @module
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { CheckpointError } from '@tensorbus/core';

/** The manifest format's version. */
export const MANIFEST_VERSION = 1;
/** Tensor dtypes a checkpoint keeps, with their bytes per element. */
export const DTYPE_BYTES = { float32: 4, int32: 4, bool: 1 } as const;
/** A dtype a checkpoint keeps. */
export type CheckpointDtype = keyof typeof DTYPE_BYTES;

/** A tensor entry: its object, and what its bytes must be. */
export interface TensorEntry {
  t: 'tensor';
  object: string;
  dtype: CheckpointDtype;
  shape: number[];
  bytes: number;
  sha256: string;
}

/** A plain (JSON) value entry. */
export interface ValueEntry {
  t: 'value';
  value: unknown;
}

/** The signed record of one checkpoint. */
export interface Manifest {
  v: typeof MANIFEST_VERSION;
  account: string;
  key: string;
  /** Milliseconds since the epoch, when it was written. */
  savedAt: number;
  entries: Record<string, TensorEntry | ValueEntry>;
  sig: string;
}

/** SHA-256 of `bytes`, hex. */
export function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function signature(secret: string, m: Omit<Manifest, 'sig'>): string {
  return createHmac('sha256', secret).update(JSON.stringify([m.v, m.account, m.key, m.savedAt, m.entries])).digest('hex');
}

/** Signs a manifest with `secret`. */
export function sign(secret: string, unsigned: Omit<Manifest, 'sig'>): Manifest {
  return { ...unsigned, sig: signature(secret, unsigned) };
}

const refuse = (key: string, why: string) => new CheckpointError(`checkpoint '${key}' refused: ${why}`);

function isShape(value: unknown, maxElements: number): value is number[] {
  if (!Array.isArray(value) || value.length > 8) return false;
  let n = 1;
  for (const d of value) {
    if (!Number.isSafeInteger(d) || d < 0) return false;
    n *= d;
  }
  return n <= maxElements;
}

/**
 * Parses and checks the manifest bytes stored under `key`: its form, that it
 * was written for `key` by `account` and signed with `secret`, and that each
 * tensor's size matches its dtype and shape within `maxBytes`.
 * @throws CheckpointError when any of that fails.
 */
export function readManifest(bytes: Uint8Array, key: string, account: string, secret: string, maxBytes: number): Manifest {
  let m: Manifest;
  try {
    m = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Manifest;
  } catch {
    throw refuse(key, 'its manifest is not JSON (truncated or corrupt)');
  }
  if (typeof m !== 'object' || m === null || m.v !== MANIFEST_VERSION || typeof m.sig !== 'string' || typeof m.account !== 'string') {
    throw refuse(key, 'its manifest is not a tensorbus checkpoint manifest');
  }
  if (typeof m.entries !== 'object' || m.entries === null || Array.isArray(m.entries) || typeof m.savedAt !== 'number') {
    throw refuse(key, 'its manifest has no entries');
  }
  if (m.account !== account) throw refuse(key, `it was written by account '${m.account}', not '${account}'`);
  const expected = Buffer.from(signature(secret, m), 'hex');
  const given = Buffer.from(m.sig, 'hex');
  if (m.key !== key || given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw refuse(key, `its signature does not match this account's secret (written by another account, or changed)`);
  }
  let total = 0;
  for (const [name, entry] of Object.entries(m.entries)) {
    if (entry?.t === 'value') continue;
    const dtype = entry?.t === 'tensor' ? entry.dtype : undefined;
    if (dtype === undefined || !Object.hasOwn(DTYPE_BYTES, dtype) || typeof entry.object !== 'string' || typeof entry.sha256 !== 'string') {
      throw refuse(key, `entry '${name}' is neither a tensor nor a value`);
    }
    if (!isShape(entry.shape, maxBytes) || entry.bytes !== entry.shape.reduce((a, b) => a * b, 1) * DTYPE_BYTES[dtype]) {
      throw refuse(key, `tensor '${name}' has a size that does not match its shape and dtype`);
    }
    total += entry.bytes;
    if (total > maxBytes) throw refuse(key, `its tensors exceed ${maxBytes} bytes`);
  }
  return m;
}
