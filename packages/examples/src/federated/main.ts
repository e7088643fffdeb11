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
 * --out (default `out`: federated.json and federated.svg).
 * @module
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startNatsServer } from '@tensorbus/nats-transport';
import { CLIENT_NAMES, configFilePath, generatePasswords, serverEnvironment, SERVER_NAME } from './accounts.js';
import type { WorkerMessage } from './ipc.js';
import type { IsolationReport } from './isolation.js';
import { summarize, writeRun, type ClientData } from './report.js';
import type { RoundResult } from './server.js';
import { parseSettings } from './settings.js';

const settings = parseSettings(process.argv.slice(2));
const workerScript = fileURLToPath(new URL('./worker.js', import.meta.url));
const width = Math.max(SERVER_NAME.length, ...CLIENT_NAMES.map((n) => n.length));
const say = (line: string) => console.log(`[${'main'.padEnd(width)}] ${line}`);

const started = Date.now();
const passwords = generatePasswords();
const configFile = configFilePath();
const nats = await startNatsServer({ configFile, env: serverEnvironment(passwords) });
say(`nats-server at ${nats.url} with ${configFile}: accounts SERVER, ${CLIENT_NAMES.map((c) => c.toUpperCase()).join(', ')}`);

// What the workers report.
const curve: RoundResult[] = [];
const isolation: IsolationReport[] = [];
const clients: ClientData[] = [];
const exits: Record<string, string> = {};
let backend = 'unknown';
let failed = false;

// Workers get this process's environment minus anything that would make them join another group.
const baseEnv: NodeJS.ProcessEnv = { ...process.env };
for (const key of ['TENSORBUS_WORLD_SIZE', 'TENSORBUS_RANK', 'TENSORBUS_NAMESPACE', 'TENSORBUS_NAME', 'NATS_URL']) delete baseEnv[key];

const children = new Map<string, ChildProcess>();

function stopAll(): void {
  for (const child of children.values()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
}

/** Starts one worker with only its own account's credentials; resolves when it exits. */
function startWorker(name: string, role: 'server' | 'client', index: number, onMessage: (m: WorkerMessage) => void): Promise<void> {
  const child = fork(workerScript, process.argv.slice(2), {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: { ...baseEnv, FED_ROLE: role, FED_INDEX: String(index), TENSORBUS_NAME: name, NATS_URL: nats.url, FED_USER: name, FED_PASS: passwords[name]! },
  });
  children.set(name, child);
  const prefix = `[${name.padEnd(width)}] `;
  createInterface({ input: child.stdout! }).on('line', (line) => process.stdout.write(prefix + line + '\n'));
  createInterface({ input: child.stderr! }).on('line', (line) => process.stderr.write(prefix + line + '\n'));
  child.on('message', (m) => onMessage(m as WorkerMessage));
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      exits[name] = signal ?? `code ${code}`;
      const scheduled = signal === 'SIGKILL' && settings.crash.has(name);
      if (scheduled) say(`${name} died (SIGKILL) at round ${settings.crash.get(name)}, as --crash asked; the others go on`);
      else if ((code !== 0 || signal) && !failed) {
        failed = true;
        say(`${name} exited with ${signal ?? `code ${code}`}: stopping the other workers`);
        stopAll();
      }
      resolve();
    });
  });
}

function collect(message: WorkerMessage): void {
  if (message.kind === 'round') curve.push(message.result);
  else if (message.kind === 'isolation') isolation.push(message.report);
  else if (message.kind === 'joined') clients.push({ worker: message.worker, samples: message.samples, classCounts: message.classCounts });
  else if (message.kind === 'done') backend = message.backend;
}

let serverReady!: () => void;
const ready = new Promise<void>((resolve) => (serverReady = resolve));
const exited: Array<Promise<void>> = [
  startWorker(SERVER_NAME, 'server', 0, (m) => {
    if (m.kind === 'ready') serverReady();
    collect(m);
  }).then(() => serverReady()),
];
await ready;
if (!failed) CLIENT_NAMES.forEach((name, index) => exited.push(startWorker(name, 'client', index, collect)));
await Promise.all(exited);
await nats.stop();

const seconds = (Date.now() - started) / 1000;
if (curve.length > 0) {
  const run = summarize(settings, { backend, seconds, clients, curve, isolation, exits });
  const chart = writeRun(settings.out, run);
  const dropped = run.curve.filter((c) => c.participants && c.participants.length < CLIENT_NAMES.length).map((c) => `${c.round} (${c.participants!.length})`);
  say(`final test accuracy ${(100 * run.finalTestAccuracy).toFixed(1)}% after ${run.curve.length - 1} rounds in ${seconds.toFixed(1)} s (backend ${backend})`);
  say(`rounds with fewer than ${CLIENT_NAMES.length} participants: ${dropped.length > 0 ? dropped.join(', ') : 'none'}`);
  say(`results written to ${chart} and federated.json`);
}
process.exitCode = failed ? 1 : 0;
