/**
 * A bus client that is not a member answers the membership and stats
 * queries (startRogue, src/testing): a made-up worker, and made-up figures
 * for a real one. Neither reaches `tensorbus status` (real worker processes,
 * a real nats-server); the real workers are shown with their own figures.
 * (The dashboard's test of the same is in @tensorbus/dashboard.)
 */
import test from 'ava';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { natsTransport } from '@tensorbus/nats-transport';
import { stop } from './fixtures/worker-functions.js';
import { ROGUE_LOSS, startRogue } from '../src/testing/index.js';
import { startProcessGroup, stopProcessGroups } from './process-group.js';

const closers: Array<() => Promise<void> | void> = [];
test.after.always(async () => {
  for (const close of closers) await Promise.resolve(close()).catch(() => undefined);
  await stopProcessGroups();
});

test.serial('status - lists only members: a non-member answering the queries adds no worker and no figure', async (t) => {
  const { agent, children, serverUrl, namespace } = await startProcessGroup(fileURLToPath(new URL('./fixtures/worker.js', import.meta.url)), 3);
  const rogue = await natsTransport({ servers: serverUrl, namespace, name: 'rogue' });
  closers.push(startRogue(rogue, { ghost: 9, p1: 1 }), () => rogue.close());
  const cli = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
  const child = spawn(process.execPath, [cli, 'status', '--server', serverUrl, '--namespace', namespace], { env: { ...process.env, TENSORBUS_QUIET: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  const [code] = (await once(child, 'exit')) as [number];
  t.is(code, 0);
  t.notRegex(out, /ghost/, 'the made-up worker is not listed');
  t.notRegex(out, /rogue|999/, 'no made-up figure is shown');
  for (const name of ['p0', 'p2']) t.regex(out, new RegExp(`^\\s*\\d+\\s+${name}\\s+\\S+\\s+\\d+`, 'm'), `${name} is listed with its stats`);
  await Promise.all([agent.rpcSync('p1', stop, []), agent.rpcSync('p2', stop, [])]);
  await agent.shutdown({ timeoutMs: 10_000 });
  await Promise.all(children.map((c) => (c.exitCode === null ? once(c, 'exit') : undefined)));
});
