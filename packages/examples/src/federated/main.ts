/**
 * Federated averaging across NATS accounts (example 5): one nats-server
 * started with the shipped `nats-server.conf`, an aggregation server in
 * account SERVER and three clients in accounts CLIENT1..3, each a process of
 * its own holding only its own account's password. Clients pull the global
 * model and push updates through the one service SERVER exports; nothing else
 * crosses an account. Run from the repository root:
 *
 *   node packages/examples/dist/src/federated/main.js --rounds 30 --skip client2:10 --crash client3:25
 *
 * Options: --rounds, --deadline-ms, --local-epochs, --batch-size, --lr,
 * --skew, --skip <client>:<round>[,...], --crash <client>:<round>, --seed,
 * --out (default `out`: federated.json and federated.svg). The browser mode
 * (tabs as clients) is `browser-main.js`.
 * @module
 */
import { startNatsServer } from '@tensorbus/nats-transport';
import { CLIENT_NAMES, configFilePath, generatePasswords, serverEnvironment, SERVER_NAME } from './accounts.js';
import { makeTickets, startFederation } from './federation.js';
import { summarize, writeRun } from './report.js';
import { parseSettings } from './settings.js';

const settings = parseSettings(process.argv.slice(2));
const width = Math.max(SERVER_NAME.length, ...CLIENT_NAMES.map((n) => n.length));
const say = (line: string) => console.log(`[${'main'.padEnd(width)}] ${line}`);

const started = Date.now();
const passwords = generatePasswords();
const configFile = configFilePath();
const nats = await startNatsServer({ configFile, env: serverEnvironment(passwords) });
say(`nats-server at ${nats.url} with ${configFile}: accounts SERVER, ${CLIENT_NAMES.map((c) => c.toUpperCase()).join(', ')}`);

const federation = await startFederation({
  settings,
  argv: process.argv.slice(2),
  natsUrl: nats.url,
  clients: CLIENT_NAMES,
  nodeClients: CLIENT_NAMES,
  passwords,
  tickets: makeTickets(CLIENT_NAMES),
  say,
});
const results = await federation.finished;
await nats.stop();

const seconds = (Date.now() - started) / 1000;
if (results.curve.length > 0) {
  const run = summarize(settings, { ...results, seconds });
  const chart = writeRun(settings.out, run);
  const dropped = run.curve.filter((c) => c.participants && c.participants.length < CLIENT_NAMES.length).map((c) => `${c.round} (${c.participants!.length})`);
  say(`final test accuracy ${(100 * run.finalTestAccuracy).toFixed(1)}% after ${run.curve.length - 1} rounds in ${seconds.toFixed(1)} s (backend ${results.backend})`);
  say(`rounds with fewer than ${CLIENT_NAMES.length} participants: ${dropped.length > 0 ? dropped.join(', ') : 'none'}`);
  say(`results written to ${chart} and federated.json`);
}
process.exitCode = results.failed ? 1 : 0;
