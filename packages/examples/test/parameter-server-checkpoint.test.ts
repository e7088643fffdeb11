/**
 * The parameter server's checkpoints (checkpoint.ts) on a real nats-server
 * with JetStream: a restore brings back parameters, step and curve; a
 * checkpoint that is refused (truncated, another launch's secret) is said,
 * and the server starts fresh.
 */
import test from 'ava';
import { connect } from 'nats';
import { tf } from '@tensorbus/core';
import { startNatsServer, type NatsServer } from '@tensorbus/nats-transport';
import { ParameterServerCheckpoints } from '../src/parameter-server/checkpoint.js';
import { BatchUpdateParameterServer } from '../src/parameter-server/server.js';

let server: NatsServer;
test.before(async () => {
  server = await startNatsServer({ jetstream: true });
  process.env.NATS_URL = server.url;
  process.env.TENSORBUS_CHECKPOINT_SECRET = 'launch-1';
});
test.after.always(async () => {
  await server?.stop();
});

/** Disposes of a server's variables (their names are global: one server at a time in a process). */
function drop(server: BatchUpdateParameterServer): void {
  server.params.forEach((p) => p.dispose());
  server.optimizer.dispose();
}

/** Runs `fn` with console.log captured. */
async function logged<T>(fn: () => Promise<T>): Promise<{ result: T; lines: string[] }> {
  const lines: string[] = [];
  const log = console.log;
  console.log = (line: string) => lines.push(line);
  try {
    return { result: await fn(), lines };
  } finally {
    console.log = log;
  }
}

test.serial('parameter server - a restore brings back parameters, step and curve; a truncated or foreign checkpoint is refused and ps starts fresh, saying so', async (t) => {
  const trained = new BatchUpdateParameterServer(1, 0.02);
  const grads = trained.params.map((p) => tf.onesLike(p));
  await trained.pushAndWait(0, grads);
  const checkpoints = await ParameterServerCheckpoints.open();
  await checkpoints.save(trained, [{ epoch: 1, trainLoss: 1, testLoss: 1, testAccuracy: 0.5 }]);
  const saved = await Promise.all(trained.params.map(async (p) => Array.from(await p.data())));
  drop(trained);

  const restarted = new BatchUpdateParameterServer(1, 0.02);
  const { result: curve } = await logged(() => checkpoints.restore(restarted));
  t.deepEqual(curve, [{ epoch: 1, trainLoss: 1, testLoss: 1, testAccuracy: 0.5 }]);
  t.is(restarted.step, 1);
  for (let i = 0; i < saved.length; i++) t.deepEqual(Array.from(await restarted.params[i]!.data()), saved[i]);
  drop(restarted);

  // Another launch (another secret) finds this checkpoint and does not use it.
  process.env.TENSORBUS_CHECKPOINT_SECRET = 'launch-2';
  const other = await ParameterServerCheckpoints.open();
  const fresh = new BatchUpdateParameterServer(1, 0.02);
  const foreign = await logged(() => other.restore(fresh));
  t.is(foreign.result, undefined);
  t.is(fresh.step, 0);
  drop(fresh);
  t.regex(foreign.lines.join('\n'), /checkpoint 'parameter-server' refused: its signature does not match this account's secret .*: starting fresh/);
  process.env.TENSORBUS_CHECKPOINT_SECRET = 'launch-1';

  // The manifest cut short, as a crash or a tampering peer would leave it.
  const nc = await connect({ servers: server.url });
  const kv = await nc.jetstream().views.kv('tensorbus-checkpoints');
  const stored = (await kv.get('parameter-server'))!.value;
  await kv.put('parameter-server', stored.subarray(0, 40));
  const again = new BatchUpdateParameterServer(1, 0.02);
  const truncated = await logged(() => checkpoints.restore(again));
  t.is(truncated.result, undefined);
  t.is(again.step, 0);
  drop(again);
  t.regex(truncated.lines.join('\n'), /refused: its manifest is not JSON \(truncated or corrupt\): starting fresh/);
  await nc.close();
  tf.dispose(grads);
  for (const store of [checkpoints, other]) await store.close();
});
