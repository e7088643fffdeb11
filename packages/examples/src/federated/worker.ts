/**
 * One worker process of the federated example, started by `main.js` with
 * `child_process.fork`. Its environment says who it is (`FED_ROLE`,
 * `TENSORBUS_NAME`, `FED_INDEX`) and how it logs in: `NATS_URL`, `FED_USER`
 * and `FED_PASS`, the credentials of its own account and no other.
 * @module
 */
import { tensorBackend } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { initRpc } from '@tensorbus/actors';
import { loadIris } from '../parameter-server/data.js';
import { CLIENT_NAMES, NAMESPACE, SERVER_NAME } from './accounts.js';
import { runClient } from './client.js';
import { classCounts, labelSkewedSplit } from './data-split.js';
import { tellMain } from './ipc.js';
import { describeIsolation, probeIsolation, type Credentials } from './isolation.js';
import { runServer } from './server.js';
import { parseSettings } from './settings.js';

function env(key: string): string {
  const value = process.env[key];
  if (!value) throw new Error(`${key} is not set: start the federated example with main.js`);
  return value;
}

const settings = parseSettings(process.argv.slice(2));
const name = env('TENSORBUS_NAME');
const credentials: Credentials = { servers: env('NATS_URL'), user: env('FED_USER'), pass: env('FED_PASS') };
const transport = natsTransport({ ...credentials, namespace: NAMESPACE, name });
const agent = await initRpc({ name, transport });

if (env('FED_ROLE') === 'server') {
  const started = Date.now();
  const finished = runServer(agent, settings, CLIENT_NAMES.length, (result) => void tellMain({ kind: 'round', result }));
  finished.catch(() => undefined); // awaited below; do not report it unhandled while the probes run
  await tellMain({ kind: 'ready' });
  // The server tries to call a client and pings its own control subject (which answers: the probe works).
  const report = await probeIsolation(agent, credentials, [CLIENT_NAMES[0]], SERVER_NAME);
  console.log(describeIsolation(report));
  await tellMain({ kind: 'isolation', report });
  await finished;
  await tellMain({ kind: 'done', backend: tensorBackend(), seconds: (Date.now() - started) / 1000 });
} else {
  const index = Number(env('FED_INDEX'));
  const iris = loadIris();
  const mine = labelSkewedSplit(iris.train, CLIENT_NAMES.length, iris.classes, settings.skew, settings.seed)[index]!;
  const counts = classCounts(mine, iris.classes);
  await tellMain({ kind: 'joined', worker: name, samples: mine.labels.length, classCounts: counts });
  // A client tries the other clients, the server's control subject, and the next client's account.
  const others = CLIENT_NAMES.filter((c) => c !== name);
  const report = await probeIsolation(agent, credentials, others, SERVER_NAME, CLIENT_NAMES[(index + 1) % CLIENT_NAMES.length]);
  console.log(describeIsolation(report));
  await tellMain({ kind: 'isolation', report });
  console.log(`local data: ${mine.labels.length} rows, per class [${counts.join(', ')}]`);
  await runClient(agent, settings, mine);
}
// The IPC channel would keep the process alive.
process.disconnect?.();
