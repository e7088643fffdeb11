/**
 * The browser mode of the federated example: one nats-server with WebSocket
 * and an account per client (the shipped config's accounts, written for this
 * run's clients), the aggregation server and any Node clients as worker
 * processes (federation.ts), and the page server that hands each tab one of
 * the run's client slots (browser/page-server.ts). Clients `client1..N` run
 * in Node, `tab1..K` in tabs; the data is split across all of them in that
 * order, so a run with tabs averages the same slices as a Node-only run of
 * the same settings.
 * @module
 */
import { startNatsServer, type NatsServer } from '@tensorbus/nats-transport';
import { accountsConfig, generatePasswords, NAMESPACE, serverEnvironment, SERVER_NAME } from './accounts.js';
import { startPageServer, type PageServer } from './browser/page-server.js';
import { SlotPool, type Slot } from './browser/slots.js';
import { makeTickets, startFederation, type Federation, type FederationOptions } from './federation.js';
import { summarize, type FederatedRun } from './report.js';
import type { RoundResult } from './server.js';
import type { Settings } from './settings.js';

/** Most tabs one run hands slots to (each is an account, a ticket and a data slice). */
export const MAX_TABS = 16;

/** What a browser-mode run is made of. */
export interface BrowserRunOptions {
  settings: Settings;
  /** The arguments the worker processes get (the run's command line). */
  argv: string[];
  /** Client slots for tabs (`tab1..K`); round 1 opens once all of them and the Node clients joined. */
  tabs: number;
  /** Node clients (`client1..N`) beside the tabs. */
  nodeClients: number;
  /** Port of the page server on 127.0.0.1 (default 0: a free one). */
  httpPort?: number;
  /** Prints a line of the run's own. */
  say(line: string): void;
  /** Where the worker processes' output goes (see {@link FederationOptions.output}). */
  output?: FederationOptions['output'];
  /** Hears of each round as the server closes it. */
  onRound?(result: RoundResult): void;
}

/** A started browser-mode run. */
export interface BrowserRun {
  /** The page to open in tabs: `http://127.0.0.1:<port>/`. */
  readonly pageUrl: string;
  /** The nats-server's `nats://` and `ws://` addresses. */
  readonly natsUrl: string;
  readonly wsUrl: string;
  /** The client slots of tabs, handed out or not. */
  readonly pool: SlotPool;
  /** Resolves with the run's record once the server and the Node clients exited; everything is stopped by then. */
  readonly finished: Promise<FederatedRun>;
  /** Stops the workers, the page server and nats-server (for an early end). */
  stop(): Promise<void>;
}

/** The names of a run's clients: Node clients first, then the tab slots. */
export function clientNames(nodeClients: number, tabs: number): { node: string[]; tabs: string[] } {
  return { node: Array.from({ length: nodeClients }, (_, i) => `client${i + 1}`), tabs: Array.from({ length: tabs }, (_, i) => `tab${i + 1}`) };
}

/** Starts the run; it goes on until the last round closed. */
export async function startBrowserFederation(options: BrowserRunOptions): Promise<BrowserRun> {
  const { settings, say } = options;
  if (!Number.isInteger(options.tabs) || options.tabs < 0 || options.tabs > MAX_TABS) throw new RangeError(`--tabs must be an integer from 0 to ${MAX_TABS}`);
  if (!Number.isInteger(options.nodeClients) || options.nodeClients < 0) throw new RangeError('--node-clients must be an integer of at least 0');
  if (options.tabs + options.nodeClients < 1) throw new RangeError('a run needs at least one client (--tabs or --node-clients)');
  const started = Date.now();
  const names = clientNames(options.nodeClients, options.tabs);
  const clients = [...names.node, ...names.tabs];
  const passwords = generatePasswords([SERVER_NAME, ...clients]);
  const tickets = makeTickets(clients);
  const nats: NatsServer = await startNatsServer({ config: accountsConfig(clients), env: serverEnvironment(passwords), websocket: { quiet: true } });
  const wsUrl = nats.wsUrl!;
  say(`nats-server at ${nats.url}, WebSocket ${wsUrl} (loopback only, no TLS): accounts SERVER, ${clients.map((c) => c.toUpperCase()).join(', ')}`);

  const tabSettings = { localEpochs: settings.localEpochs, batchSize: settings.batchSize, learningRate: settings.learningRate, seed: settings.seed, skew: settings.skew };
  const slots: Slot[] = names.tabs.map((client) => ({
    client,
    pass: passwords[client]!,
    ticket: tickets.get(client)!,
    servers: wsUrl,
    namespace: NAMESPACE,
    index: clients.indexOf(client),
    clients: clients.length,
    settings: { ...tabSettings, skip: [...(settings.skip.get(client) ?? [])] },
  }));
  const pool = new SlotPool(slots);
  let pages: PageServer | undefined;
  let federation: Federation | undefined;
  const stopAll = async () => {
    federation?.stop();
    await pages?.close();
    await nats.stop();
  };
  try {
    pages = await startPageServer(pool, options.httpPort ?? 0, (slot) => say(`${slot.client}: slot handed to a tab (${pool.left} left)`));
    federation = await startFederation({ settings, argv: options.argv, natsUrl: nats.url, clients, nodeClients: names.node, passwords, tickets, say, output: options.output, onRound: options.onRound });
  } catch (error) {
    await stopAll();
    throw error;
  }
  const finished = federation.finished.then(async (results) => {
    await pages!.close();
    await nats.stop();
    const run = summarize(settings, { ...results, seconds: (Date.now() - started) / 1000 });
    if (results.failed) throw new Error(`a worker failed (exits: ${JSON.stringify(results.exits)})`);
    return run;
  });
  return { pageUrl: pages.url, natsUrl: nats.url, wsUrl, pool, finished, stop: stopAll };
}
