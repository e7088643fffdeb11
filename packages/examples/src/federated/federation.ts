/**
 * The processes of one federated run, shared by `main.js` (Node clients
 * only) and the browser mode: the aggregation server and the Node clients,
 * each a worker process of its own (worker.js) holding only its own
 * account's password, their output prefixed with their names, and what they
 * report gathered for `federated.json`.
 * @module
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { SERVER_NAME } from './accounts.js';
import type { WorkerMessage } from './ipc.js';
import type { IsolationReport } from './isolation.js';
import type { ClientData } from './report.js';
import type { RoundResult } from './server.js';
import type { Settings } from './settings.js';

const workerScript = fileURLToPath(new URL('./worker.js', import.meta.url));

/** What starts a federation. */
export interface FederationOptions {
  settings: Settings;
  /** The arguments the workers get (the run's command line). */
  argv: string[];
  /** `nats://` address of the nats-server. */
  natsUrl: string;
  /** Every client of the run, in the order of the data split (slice i goes to clients[i]). */
  clients: readonly string[];
  /** The clients among `clients` that run as Node worker processes (the others join from elsewhere: tabs). */
  nodeClients: readonly string[];
  /** Each user's password (the server's and every Node client's at least). */
  passwords: Readonly<Record<string, string>>;
  /** Each client's ticket (see protocol.ts), made by {@link makeTickets}. */
  tickets: ReadonlyMap<string, string>;
  /** Prints a line of the run's own (not a worker's). */
  say(line: string): void;
  /** Where the workers' output goes, a line at a time prefixed with the worker's name (default: this process's stdout and stderr). */
  output?(line: string, stream: 'stdout' | 'stderr'): void;
  /** Hears of each round as the server closes it. */
  onRound?(result: RoundResult): void;
}

/** What the workers reported, for report.ts. */
export interface FederationResults {
  backend: string;
  clients: ClientData[];
  curve: RoundResult[];
  isolation: IsolationReport[];
  exits: Record<string, string>;
  /** A worker failed (exited with an error, or a signal it was not asked to take). */
  failed: boolean;
}

/** A started federation. */
export interface Federation {
  /** What the workers reported so far (complete once `finished` resolved). */
  readonly results: FederationResults;
  /** Resolves when the server and every Node client exited. */
  readonly finished: Promise<FederationResults>;
  /** Sends SIGTERM to every worker still running. */
  stop(): void;
}

/** A new random ticket for each client. */
export function makeTickets(clients: readonly string[]): Map<string, string> {
  return new Map(clients.map((client) => [client, randomBytes(16).toString('hex')]));
}

/** Starts the server, then (once it is ready) the Node clients. */
export async function startFederation(options: FederationOptions): Promise<Federation> {
  const { settings, say } = options;
  const width = Math.max(SERVER_NAME.length, 4, ...options.clients.map((n) => n.length));
  const results: FederationResults = { backend: 'unknown', clients: [], curve: [], isolation: [], exits: {}, failed: false };
  // Workers get this process's environment minus anything that would make them join another group.
  const baseEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const key of ['TENSORBUS_WORLD_SIZE', 'TENSORBUS_RANK', 'TENSORBUS_NAMESPACE', 'TENSORBUS_NAME', 'NATS_URL']) delete baseEnv[key];
  const children = new Map<string, ChildProcess>();
  const stop = () => {
    for (const child of children.values()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  };

  const collect = (message: WorkerMessage) => {
    if (message.kind === 'round') {
      results.curve.push(message.result);
      options.onRound?.(message.result);
    } else if (message.kind === 'isolation') results.isolation.push(message.report);
    else if (message.kind === 'joined') results.clients.push({ worker: message.worker, samples: message.samples, classCounts: message.classCounts });
    else if (message.kind === 'done') results.backend = message.backend;
  };

  /** Starts one worker with only its own account's credentials; resolves when it exits. */
  const startWorker = (name: string, extraEnv: Record<string, string>, onMessage: (m: WorkerMessage) => void): Promise<void> => {
    const child = fork(workerScript, options.argv, {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: { ...baseEnv, ...extraEnv, TENSORBUS_NAME: name, NATS_URL: options.natsUrl, FED_USER: name, FED_PASS: options.passwords[name]!, FED_CLIENTS: options.clients.join(',') },
    });
    children.set(name, child);
    const prefix = `[${name.padEnd(width)}] `;
    const output = options.output ?? ((line, stream) => process[stream].write(line + '\n'));
    createInterface({ input: child.stdout! }).on('line', (line) => output(prefix + line, 'stdout'));
    createInterface({ input: child.stderr! }).on('line', (line) => output(prefix + line, 'stderr'));
    child.on('message', (m) => onMessage(m as WorkerMessage));
    return new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        results.exits[name] = signal ?? `code ${code}`;
        const scheduled = signal === 'SIGKILL' && settings.crash.has(name);
        if (scheduled) say(`${name} died (SIGKILL) at round ${settings.crash.get(name)}, as --crash asked; the others go on`);
        else if ((code !== 0 || signal) && !results.failed) {
          results.failed = true;
          say(`${name} exited with ${signal ?? `code ${code}`}: stopping the other workers`);
          stop();
        }
        resolve();
      });
    });
  };

  let serverReady!: () => void;
  const ready = new Promise<void>((resolve) => (serverReady = resolve));
  const tickets = JSON.stringify(Object.fromEntries(options.tickets));
  const exited: Array<Promise<void>> = [
    startWorker(SERVER_NAME, { FED_ROLE: 'server', FED_TICKETS: tickets }, (m) => {
      if (m.kind === 'ready') serverReady();
      collect(m);
    }).then(() => serverReady()),
  ];
  await ready;
  if (!results.failed) {
    for (const name of options.nodeClients) {
      const env = { FED_ROLE: 'client', FED_INDEX: String(options.clients.indexOf(name)), FED_TICKET: options.tickets.get(name)! };
      exited.push(startWorker(name, env, collect));
    }
  }
  return { results, finished: Promise.all(exited).then(() => results), stop };
}
