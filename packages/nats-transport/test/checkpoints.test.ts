/**
 * Checkpoints in NATS JetStream (checkpoint-store.ts) on real nats-servers:
 * tensors and values round-trip; a truncated, reshaped or foreign checkpoint
 * is refused with CHECKPOINT_INVALID; with three replicas a checkpoint
 * survives the loss of a node of a 3-node cluster.
 */
import test from 'ava';
import { connect } from 'nats';
import { CheckpointError, tf } from '@tensorbus/core';
import { checkpointStore, startNatsCluster, startNatsServer, type CheckpointStore, type NatsServer } from '../src/index.js';

const SECRET = 'test-secret';
let server: NatsServer;
test.before(async () => {
  server = await startNatsServer({ jetstream: true });
});
test.after.always(async () => {
  await server?.stop();
});

let buckets = 0;
/** A store on a bucket of its own. */
async function freshStore(extra: Parameters<typeof checkpointStore>[0] = {}): Promise<{ store: CheckpointStore; bucket: string }> {
  const bucket = extra.bucket ?? `cp${process.pid}x${++buckets}`;
  return { store: await checkpointStore({ servers: server.url, secret: SECRET, ...extra, bucket }), bucket };
}

function weights(): { w: tf.Tensor; ids: tf.Tensor; mask: tf.Tensor } {
  // 300 x 300 float32: 360 KB, more than two of the Object Store's chunks.
  return {
    w: tf.tensor(Float32Array.from({ length: 90_000 }, (_, i) => Math.sin(i)), [300, 300]),
    ids: tf.tensor([1, 2, 3], [3], 'int32'),
    mask: tf.tensor([1, 0, 1, 1], [2, 2], 'bool'),
  };
}

test.serial('checkpoints - tensors and plain values round-trip by key, and a missing key loads as undefined; no tensor leaks', async (t) => {
  const { store } = await freshStore();
  const baseline = tf.memory().numTensors;
  const saved = weights();
  await store.save('ps', { epoch: 7, lr: 0.05, note: { by: 'ps' }, ...saved });
  const loaded = (await store.load('ps', { w: { shape: [300, 300], dtype: 'float32' } }))!;
  t.is(loaded.epoch, 7);
  t.is(loaded.lr, 0.05);
  t.deepEqual(loaded.note, { by: 'ps' });
  for (const name of ['w', 'ids', 'mask'] as const) {
    const got = loaded[name] as tf.Tensor;
    t.is(got.dtype, saved[name].dtype);
    t.deepEqual(got.shape, saved[name].shape);
    t.deepEqual(Array.from(await got.data()), Array.from(await saved[name].data()), name);
    got.dispose();
    saved[name].dispose();
  }
  t.is(await store.load('nobody'), undefined);
  t.is(tf.memory().numTensors, baseline);
  // A second save replaces the first.
  const w2 = tf.zeros([2]);
  await store.save('ps', { epoch: 8, w: w2 });
  const again = (await store.load('ps'))!;
  t.is(again.epoch, 8);
  t.deepEqual(Array.from(await (again.w as tf.Tensor).data()), [0, 0]);
  (again.w as tf.Tensor).dispose();
  w2.dispose();
  await store.close();
});

async function refusal(t: { throwsAsync: (p: Promise<unknown>, e: object) => Promise<unknown> }, load: Promise<unknown>, message: RegExp): Promise<void> {
  await t.throwsAsync(load, { instanceOf: CheckpointError, code: 'CHECKPOINT_INVALID', message } as object);
}

test.serial('checkpoints - a truncated tensor or manifest is refused with CHECKPOINT_INVALID, leaving no tensor behind', async (t) => {
  const { store, bucket } = await freshStore();
  const saved = weights();
  await store.save('ps', { epoch: 1, ...saved });
  const nc = await connect({ servers: server.url });
  const js = nc.jetstream();
  const os = await js.views.os(`${bucket}-tensors`);
  const kv = await js.views.kv(bucket);
  const manifest = JSON.parse(new TextDecoder().decode((await kv.get('ps'))!.value)) as { entries: { w: { object: string } } };
  const baseline = tf.memory().numTensors;
  // The tensor's object cut short (as a crash mid-write or a tampering peer would leave it).
  const full = (await os.getBlob(manifest.entries.w.object))!;
  await os.putBlob({ name: manifest.entries.w.object }, full.subarray(0, 1000));
  await refusal(t, store.load('ps'), /tensor 'w' has 1000 of its 360000 bytes \(truncated\)/);
  // The same number of bytes, but not the ones signed.
  await os.putBlob({ name: manifest.entries.w.object }, new Uint8Array(full.byteLength));
  await refusal(t, store.load('ps'), /tensor 'w' is not the bytes its manifest signs/);
  // The manifest itself cut short.
  const stored = (await kv.get('ps'))!.value;
  await kv.put('ps', stored.subarray(0, stored.byteLength >> 1));
  await refusal(t, store.load('ps'), /its manifest is not JSON \(truncated or corrupt\)/);
  t.is(tf.memory().numTensors, baseline);
  for (const tensor of Object.values(saved)) tensor.dispose();
  await nc.close();
  await store.close();
});

test.serial('checkpoints - a checkpoint of another shape or dtype than the reader expects is refused', async (t) => {
  const { store } = await freshStore();
  const w = tf.ones([4, 3]);
  await store.save('ps', { w });
  const baseline = tf.memory().numTensors;
  await refusal(t, store.load('ps', { w: { shape: [3, 4] } }), /tensor 'w' is float32 \[4,3\], expected float32 \[3,4\]/);
  await refusal(t, store.load('ps', { w: { shape: [4, 3], dtype: 'int32' } }), /expected int32 \[4,3\]/);
  await refusal(t, store.load('ps', { bias: { shape: [3] } }), /it has no tensor 'bias'/);
  t.is(tf.memory().numTensors, baseline);
  w.dispose();
  await store.close();
});

test.serial('checkpoints - a checkpoint written by another account, or signed with another secret, is refused', async (t) => {
  const { store: mine, bucket } = await freshStore({ account: 'team-a' });
  const { store: theirs } = await freshStore({ bucket, account: 'team-b', secret: 'their-secret' });
  const { store: forger } = await freshStore({ bucket, account: 'team-a', secret: 'guessed' });
  const w = tf.ones([2]);
  await theirs.save('ps', { w, epoch: 99 });
  await refusal(t, mine.load('ps'), /it was written by account 'team-b', not 'team-a'/);
  await forger.save('ps', { w, epoch: 99 });
  await refusal(t, mine.load('ps'), /its signature does not match this account's secret/);
  await mine.save('ps', { w, epoch: 1 });
  t.is((await mine.load('ps'))!.epoch, 1);
  w.dispose();
  for (const s of [mine, theirs, forger]) await s.close();
});

test.serial('checkpoints - with three replicas in a 3-node JetStream cluster, a checkpoint survives the loss of a node', async (t) => {
  const cluster = await startNatsCluster({ size: 3, jetstream: true });
  try {
    const writer = await checkpointStore({ servers: cluster.urls[0], secret: SECRET, replicas: 3 });
    const w = tf.tensor(Float32Array.from({ length: 70_000 }, (_, i) => i % 97), [70_000]);
    await writer.save('ps', { epoch: 12, w });
    await writer.close();
    // Both buckets' streams keep three copies, on three nodes.
    const nc = await connect({ servers: cluster.urls[0] });
    const jsm = await nc.jetstreamManager();
    for (const stream of ['KV_tensorbus-checkpoints', 'OBJ_tensorbus-checkpoints-tensors']) {
      const info = await jsm.streams.info(stream);
      t.is(info.config.num_replicas, 3, stream);
      t.is(info.cluster?.replicas?.length, 2, `${stream}: a leader and two replicas`);
    }
    await nc.close();
    await cluster.servers[0]!.stop();
    // The streams elect new leaders among the two nodes left; a read waits for that.
    let reader: CheckpointStore | undefined;
    let loaded: Awaited<ReturnType<CheckpointStore['load']>>;
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        reader ??= await checkpointStore({ servers: cluster.urls[1], secret: SECRET, replicas: 3 });
        loaded = await reader.load('ps');
        break;
      } catch (error) {
        if (error instanceof CheckpointError || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    t.is(loaded!.epoch, 12);
    t.deepEqual(Array.from(await (loaded!.w as tf.Tensor).data()), Array.from(await w.data()));
    (loaded!.w as tf.Tensor).dispose();
    w.dispose();
    await reader!.close();
  } finally {
    await cluster.stop();
  }
});
