/**
 * One worker process of the federated example, started by `main.js` (or the
 * browser mode's `browser-main.js`) with `child_process.fork`. Its
 * environment says who it is (`FED_ROLE`, `TENSORBUS_NAME`, `FED_INDEX`, the
 * federation's clients in `FED_CLIENTS`), how it logs in (`NATS_URL`,
 * `FED_USER`, `FED_PASS`: the credentials of its own account and no other)
 * and how it names itself to the server: a client its `FED_TICKET`, the
 * server every client's (`FED_TICKETS`, JSON).
 * @module
 */
import { tensorBackend } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { initRpc } from '@tensorbus/actors';
import { loadIris } from '../parameter-server/data.js';
import { NAMESPACE, SERVER_NAME } from './accounts.js';
import { runClient } from './client.js';
import { classCounts, labelSkewedSplit } from './data-split.js';
import { tellMain } from './ipc.js';
import { describeIsolation, probeIsolation, type Credentials } from './isolation.js';
import { runServer } from './server.js';
import { parseSettings } from './settings.js';

/** The most bytes the server takes in one call (the model is under 1 KB): a bound on what a client makes it decode. */
const SERVER_MAX_TRANSFER_BYTES = 1 << 20;

function env(key: string): string {
  const value = process.env[key];
  if (!value) throw new Error(`${key} is not set: start the federated example with main.js`);
  return value;
}

const settings = parseSettings(process.argv.slice(2));
const name = env('TENSORBUS_NAME');
const clients = env('FED_CLIENTS').split(',');
const role = env('FED_ROLE');
const credentials: Credentials = { servers: env('NATS_URL'), user: env('FED_USER'), pass: env('FED_PASS') };
const transport = natsTransport({ ...credentials, namespace: NAMESPACE, name, ...(role === 'server' ? { maxTransferBytes: SERVER_MAX_TRANSFER_BYTES } : {}) });
const agent = await initRpc({ name, transport });

if (role === 'server') {
  const started = Date.now();
  const tickets = new Map(Object.entries(JSON.parse(env('FED_TICKETS')) as Record<string, string>));
  const finished = runServer(agent, settings, tickets, (result) => void tellMain({ kind: 'round', result }));
  finished.catch(() => undefined); // awaited below; do not report it unhandled while the probes run
  await tellMain({ kind: 'ready' });
  // The server tries to call a client and pings its own control subject (which answers: the probe works).
  const report = await probeIsolation(agent, credentials, [clients[0]!], SERVER_NAME);
  console.log(describeIsolation(report));
  await tellMain({ kind: 'isolation', report });
  await finished;
  await tellMain({ kind: 'done', backend: tensorBackend(), seconds: (Date.now() - started) / 1000 });
} else {
  const index = Number(env('FED_INDEX'));
  const iris = loadIris();
  const mine = labelSkewedSplit(iris.train, clients.length, iris.classes, settings.skew, settings.seed)[index]!;
  const counts = classCounts(mine, iris.classes);
  await tellMain({ kind: 'joined', worker: name, samples: mine.labels.length, classCounts: counts });
  // A client tries the other clients, the server's control subject, and the next client's account.
  const others = clients.filter((c) => c !== name);
  const report = await probeIsolation(agent, credentials, others, SERVER_NAME, clients[(index + 1) % clients.length]);
  console.log(describeIsolation(report));
  await tellMain({ kind: 'isolation', report });
  console.log(`local data: ${mine.labels.length} rows, per class [${counts.join(', ')}]`);
  const crashAt = settings.crash.get(name);
  const clientSettings = { ...settings, skip: settings.skip.get(name) ?? new Set<number>() };
  await runClient(agent, { client: name, ticket: env('FED_TICKET') }, clientSettings, mine, {
    beforeRound: (round) => {
      if (round !== crashAt) return;
      console.log(`round ${round}: crashing now (SIGKILL, no goodbye), as --crash ${name}:${round} asks`);
      process.kill(process.pid, 'SIGKILL');
    },
  });
}
// The IPC channel would keep the process alive.
process.disconnect?.();
