/**
 * The browser mode's page script (bundled for the browser by
 * page-server.ts): asks the page server for a client slot (once per tab: a
 * reloaded tab takes its slot up again and rejoins as the same client), joins the
 * federation over NATS WebSocket with that slot's credentials only, takes its
 * slice of the data, and runs the same client loop as a Node client
 * (client.ts), showing each round on the page. `window.fedStatus` holds what
 * the page shows, for scripts driving the tab.
 * @module
 */
import { tensorBackend, tf } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { initRpc } from '@tensorbus/actors';
import { loadIris } from '../../parameter-server/data.js';
import { runClient, type ClientRound } from '../client.js';
import { classCounts, labelSkewedSplit } from '../data-split.js';
import type { Slot } from './slots.js';

/** What the page shows. */
interface FedStatus {
  state: 'connecting' | 'waiting' | 'training' | 'done' | 'no-slot' | 'error';
  client?: string;
  rounds?: number;
  history: ClientRound[];
  finalAccuracy?: number;
  /** Tensors the page holds once the run ended (none: the client loop frees what it makes). */
  tensorsAtEnd?: number;
  error?: string;
}

const status: FedStatus = { state: 'connecting', history: [] };
Object.assign(window, { fedStatus: status });

const element = (id: string) => document.getElementById(id)!;
const percent = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(1)}%` : '–');

function setState(state: FedStatus['state'], text: string): void {
  status.state = state;
  element('state').className = `state-${state}`;
  element('state').textContent = text;
  console.log(text);
}

/** Redraws the chart: the global model's held-out accuracy at the start of each round, and the final one. */
function drawChart(rounds: number): void {
  const points = status.history.map((h) => [h.round - 1, h.globalAccuracy] as const);
  if (status.finalAccuracy !== undefined) points.push([rounds, status.finalAccuracy]);
  const x = (round: number) => 40 + (680 * round) / Math.max(1, rounds);
  const y = (accuracy: number) => 130 - 120 * accuracy;
  const grid = [0, 0.5, 1].map((a) => `<line x1="40" x2="720" y1="${y(a)}" y2="${y(a)}" stroke="#e3e6ec"/><text x="34" y="${y(a) + 4}" text-anchor="end">${100 * a}%</text>`).join('');
  const line = points.map(([r, a]) => `${x(r).toFixed(1)},${y(a).toFixed(1)}`).join(' ');
  const dots = points.map(([r, a]) => `<circle cx="${x(r).toFixed(1)}" cy="${y(a).toFixed(1)}" r="3" fill="#3b6fd8"/>`).join('');
  element('chart').innerHTML = `${grid}<polyline points="${line}" fill="none" stroke="#3b6fd8" stroke-width="2"/>${dots}<text x="720" y="148" text-anchor="end">round ${rounds}</text><text x="40" y="148">round 0</text>`;
}

function showRound(progress: ClientRound): void {
  status.history.push(progress);
  element('round').textContent = `${progress.round} / ${progress.rounds}`;
  element('global').textContent = percent(progress.globalAccuracy);
  element('local-acc').textContent = percent(progress.localAccuracy);
  element('local-loss').textContent = progress.localLoss.toFixed(3);
  element('progress').style.width = `${(100 * progress.round) / progress.rounds}%`;
  const row = document.createElement('tr');
  for (const cell of [String(progress.round), percent(progress.globalAccuracy), progress.localLoss.toFixed(3), percent(progress.localAccuracy), progress.accepted ? 'averaged' : 'too late']) {
    const td = document.createElement('td');
    td.textContent = cell;
    row.appendChild(td);
  }
  element('rounds').prepend(row);
  drawChart(progress.rounds);
  setState('training', `round ${progress.round}/${progress.rounds}: local loss ${progress.localLoss.toFixed(3)}, local accuracy ${percent(progress.localAccuracy)}, global accuracy at the start ${percent(progress.globalAccuracy)}`);
}

/** Where a tab keeps its slot: sessionStorage lives as long as the tab, across reloads, and is the tab's own. */
const SLOT_KEY = 'tensorbus-federated-slot';

/** This tab's slot: the one it was given before a reload, else a new one from the page server (undefined: none left). */
async function takeSlot(): Promise<Slot | undefined> {
  const kept = sessionStorage.getItem(SLOT_KEY);
  if (kept) return JSON.parse(kept) as Slot;
  const answer = await fetch('/slot', { method: 'POST' });
  if (answer.status === 503) {
    setState('no-slot', `no client slot left: ${await answer.text()}`);
    return undefined;
  }
  if (!answer.ok) throw new Error(`the page server answered ${answer.status} to POST /slot`);
  const text = await answer.text();
  sessionStorage.setItem(SLOT_KEY, text);
  return JSON.parse(text) as Slot;
}

async function run(): Promise<void> {
  const slot = await takeSlot();
  if (!slot) return;
  status.client = slot.client;
  const iris = loadIris();
  const mine = labelSkewedSplit(iris.train, slot.clients, iris.classes, slot.settings.skew, slot.settings.seed)[slot.index]!;
  element('who').textContent =
    `client '${slot.client}' in NATS account ${slot.client.toUpperCase()} (its own credentials only), ${mine.labels.length} local rows, ` +
    `per class [${classCounts(mine, iris.classes).join(', ')}]; TensorFlow.js on ${tensorBackend()}`;
  const transport = natsTransport({ servers: slot.servers, namespace: slot.namespace, name: slot.client, user: slot.client, pass: slot.pass });
  const agent = await initRpc({ name: slot.client, transport });
  setState('waiting', `joined as '${slot.client}': waiting for round 1 (every client of the run must join)`);
  const settings = { ...slot.settings, skip: new Set(slot.settings.skip) };
  await runClient(agent, { client: slot.client, ticket: slot.ticket }, settings, mine, {
    heldOut: iris.test,
    onRound: (progress) => {
      status.rounds = progress.rounds;
      showRound(progress);
    },
    onDone: (accuracy) => {
      status.finalAccuracy = accuracy;
      element('global').textContent = percent(accuracy);
      element('progress').style.width = '100%';
      element('round').textContent = `${status.rounds ?? '–'} / ${status.rounds ?? '–'}`;
      if (status.rounds) drawChart(status.rounds);
    },
  });
  status.tensorsAtEnd = tf.memory().numTensors;
  setState('done', `done: the global model's held-out accuracy is ${percent(status.finalAccuracy ?? Number.NaN)}`);
}

run().catch((error: unknown) => {
  status.error = String((error as Error)?.message ?? error);
  setState('error', `stopped: ${status.error}`);
});
