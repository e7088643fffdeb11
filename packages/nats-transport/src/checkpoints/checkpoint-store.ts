/**
 * Checkpoints of tensors and plain values, by key, in NATS JetStream: the
 * manifest (plain values, and what each tensor must be) in a KV bucket, each
 * tensor's bytes in an Object Store bucket, which keeps them in chunks. Both
 * buckets are replicated `replicas` times across a JetStream cluster, so a
 * checkpoint survives the loss of a node. A save writes the tensors first and
 * the manifest last, so a reader sees the previous checkpoint or the new one,
 * never half of one. See docs/supervision.md.
 * @module
 */
import { connect, type ConnectionOptions, type KV, type NatsConnection, type ObjectStore } from 'nats';
import { CheckpointError, InvalidArgumentError, tf } from '@tensorbus/core';
import { DTYPE_BYTES, readManifest, sha256, sign, type CheckpointDtype, type Manifest, type TensorEntry } from './checkpoint-manifest.js';

/** Options of {@link checkpointStore}. */
export interface CheckpointStoreOptions extends ConnectionOptions {
  /** The KV bucket's name; the Object Store's is this with `-tensors` (default `tensorbus-checkpoints`). */
  bucket?: string;
  /** Copies of each checkpoint in a JetStream cluster: 1, 3 or 5 (default 1). */
  replicas?: number;
  /** The account checkpoints are written and read as (default the connection's `user`, else `default`). */
  account?: string;
  /** The secret that signs this account's manifests (default `TENSORBUS_CHECKPOINT_SECRET`). */
  secret?: string;
  /** Tensor bytes one checkpoint may hold; a larger one is refused on read (default 1 GiB). */
  maxBytes?: number;
}

/** What a checkpoint holds: tensors (float32, int32, bool) and JSON values, by name. */
export type CheckpointEntries = Record<string, tf.Tensor | unknown>;

/** What a reader expects of a checkpoint's tensors; a checkpoint that differs is refused. */
export type CheckpointExpectation = Record<string, { shape: readonly number[]; dtype?: CheckpointDtype }>;

/** A store of checkpoints. */
export interface CheckpointStore {
  /** Saves `entries` under `key`, replacing the checkpoint there. */
  save(key: string, entries: CheckpointEntries): Promise<void>;
  /**
   * The checkpoint under `key` (its tensors are new: the caller disposes of
   * them), or undefined when there is none.
   * @throws CheckpointError when it is truncated, corrupt, not as `expect` says, or not this account's.
   */
  load(key: string, expect?: CheckpointExpectation): Promise<CheckpointEntries | undefined>;
  /** Removes the checkpoint under `key`. */
  delete(key: string): Promise<void>;
  /** Closes the store's connection. */
  close(): Promise<void>;
}

/** Keys: what a KV key allows, without the separators' edge cases. */
const KEY_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9_=.-]{0,127}$/;
const DEFAULT_MAX_BYTES = 2 ** 30;

function checkKey(key: string): void {
  if (typeof key !== 'string' || !KEY_PATTERN.test(key) || key.includes('..') || key.endsWith('.')) {
    throw new InvalidArgumentError(`invalid checkpoint key ${JSON.stringify(key)}: use letters, digits, '_', '-', '=' and '.'`);
  }
}

function toTensor(bytes: Uint8Array, entry: TensorEntry): tf.Tensor {
  // A copy of its own, aligned (a Buffer's slice would share the pool's memory).
  const copy = new Uint8Array(bytes);
  if (entry.dtype === 'float32') return tf.tensor(new Float32Array(copy.buffer), entry.shape, 'float32');
  if (entry.dtype === 'int32') return tf.tensor(new Int32Array(copy.buffer), entry.shape, 'int32');
  return tf.tensor(copy, entry.shape, 'bool');
}

class JetStreamCheckpoints implements CheckpointStore {
  constructor(
    private readonly nc: NatsConnection,
    private readonly kv: KV,
    private readonly os: ObjectStore,
    private readonly account: string,
    private readonly secret: string,
    private readonly maxBytes: number,
  ) {}

  async save(key: string, entries: CheckpointEntries): Promise<void> {
    checkKey(key);
    const savedAt = Date.now();
    const generation = `${savedAt.toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    const manifest: Omit<Manifest, 'sig'> = { v: 1, account: this.account, key, savedAt, entries: {} };
    for (const [name, value] of Object.entries(entries)) {
      if (!(value instanceof tf.Tensor)) {
        manifest.entries[name] = { t: 'value', value: JSON.parse(JSON.stringify(value ?? null)) };
        continue;
      }
      if (!Object.hasOwn(DTYPE_BYTES, value.dtype)) throw new InvalidArgumentError(`checkpoint '${key}': tensor '${name}' is ${value.dtype}; a checkpoint keeps float32, int32 and bool`);
      const data = await value.data();
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      const object = `${key}/${generation}/${name}`;
      await this.os.putBlob({ name: object }, bytes);
      manifest.entries[name] = { t: 'tensor', object, dtype: value.dtype as CheckpointDtype, shape: value.shape, bytes: bytes.byteLength, sha256: sha256(bytes) };
    }
    const previous = await this.manifestOf(key).catch(() => undefined);
    await this.kv.put(key, new TextEncoder().encode(JSON.stringify(sign(this.secret, manifest))));
    if (previous) await this.deleteObjects(previous);
  }

  async load(key: string, expect: CheckpointExpectation = {}): Promise<CheckpointEntries | undefined> {
    checkKey(key);
    const manifest = await this.manifestOf(key);
    if (manifest === undefined) return undefined;
    const out: CheckpointEntries = {};
    try {
      for (const [name, want] of Object.entries(expect)) {
        const entry = manifest.entries[name];
        if (entry?.t !== 'tensor') throw new CheckpointError(`checkpoint '${key}' refused: it has no tensor '${name}'`);
        if (entry.shape.length !== want.shape.length || entry.shape.some((d, i) => d !== want.shape[i]) || (want.dtype !== undefined && entry.dtype !== want.dtype)) {
          throw new CheckpointError(`checkpoint '${key}' refused: tensor '${name}' is ${entry.dtype} [${entry.shape}], expected ${want.dtype ?? entry.dtype} [${want.shape}]`);
        }
      }
      for (const [name, entry] of Object.entries(manifest.entries)) {
        if (entry.t === 'value') {
          out[name] = entry.value;
          continue;
        }
        // The size the store reports is checked before the bytes are read.
        const info = await this.os.info(entry.object);
        if (info === null || info.deleted || info.size !== entry.bytes) {
          throw new CheckpointError(`checkpoint '${key}' refused: tensor '${name}' has ${info?.size ?? 0} of its ${entry.bytes} bytes (truncated)`);
        }
        const bytes = await this.os.getBlob(entry.object);
        if (bytes === null || bytes.byteLength !== entry.bytes || sha256(bytes) !== entry.sha256) {
          throw new CheckpointError(`checkpoint '${key}' refused: tensor '${name}' is not the bytes its manifest signs (truncated or changed)`);
        }
        out[name] = toTensor(bytes, entry);
      }
    } catch (error) {
      for (const value of Object.values(out)) if (value instanceof tf.Tensor) value.dispose();
      throw error;
    }
    return out;
  }

  async delete(key: string): Promise<void> {
    checkKey(key);
    const manifest = await this.manifestOf(key).catch(() => undefined);
    await this.kv.delete(key);
    if (manifest) await this.deleteObjects(manifest);
  }

  async close(): Promise<void> {
    await this.nc.drain();
  }

  private async manifestOf(key: string): Promise<Manifest | undefined> {
    const stored = await this.kv.get(key);
    if (stored === null || stored.operation !== 'PUT') return undefined;
    return readManifest(stored.value, key, this.account, this.secret, this.maxBytes);
  }

  private async deleteObjects(manifest: Manifest): Promise<void> {
    for (const entry of Object.values(manifest.entries)) {
      if (entry.t === 'tensor') await this.os.delete(entry.object).catch(() => undefined);
    }
  }
}

/**
 * Opens the checkpoint store of a NATS server with JetStream enabled
 * (`startNatsServer({ jetstream: true })`, `tensorbus launch`), creating its
 * buckets with `replicas` copies if they do not exist.
 *
 * @example
 * ```ts
 * const store = await checkpointStore({ servers: process.env.NATS_URL, secret, replicas: 3 });
 * await store.save('ps', { epoch: 7, weights });
 * const restored = await store.load('ps', { weights: { shape: [784, 10] } });
 * ```
 */
export async function checkpointStore(options: CheckpointStoreOptions = {}): Promise<CheckpointStore> {
  const { bucket = 'tensorbus-checkpoints', replicas = 1, account, secret, maxBytes = DEFAULT_MAX_BYTES, ...connection } = options;
  const key = secret ?? process.env.TENSORBUS_CHECKPOINT_SECRET;
  if (!key) throw new InvalidArgumentError('a checkpoint store needs a secret to sign its checkpoints: pass { secret } or set TENSORBUS_CHECKPOINT_SECRET');
  if (![1, 3, 5].includes(replicas)) throw new InvalidArgumentError(`replicas is 1, 3 or 5, got ${replicas}`);
  const nc = await connect(connection);
  try {
    const js = nc.jetstream();
    const kv = await js.views.kv(bucket, { replicas, history: 1 });
    const os = await js.views.os(`${bucket}-tensors`, { replicas });
    return new JetStreamCheckpoints(nc, kv, os, account ?? connection.user ?? 'default', key, maxBytes);
  } catch (error) {
    await nc.close();
    throw error;
  }
}
