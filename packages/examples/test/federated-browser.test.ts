/**
 * The federated example's browser mode (browser-run.ts): tabs in headless
 * Chromium (playwright-core on the system's browser, the shared helper) take
 * client slots from the page server and train with a Node client, each in
 * its own NATS account, on a real nats-server; a closed tab costs one round
 * deadline; what a hostile holder of a tab's credentials sends is refused
 * with a typed error while the rounds go on.
 */
import test from 'ava';
import { InvalidArgumentError, tf } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { launchChromium } from '@tensorbus/nats-transport/testing/browser';
import { initRpc } from '@tensorbus/actors';
import type { Browser, Page } from 'playwright-core';
import { startBrowserFederation } from '../src/federated/browser-run.js';
import type { Slot } from '../src/federated/browser/slots.js';
import { getGlobal, join, submitUpdate, type ClientId } from '../src/federated/protocol.js';
import type { FederatedRun } from '../src/federated/report.js';
import { parseSettings } from '../src/federated/settings.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';

const ROUNDS = 6;
const DEADLINE_MS = 2_000;

function settingsFor(rounds = ROUNDS) {
  const argv = ['--rounds', String(rounds), '--deadline-ms', String(DEADLINE_MS), '--out', mkdtempSync(joinPath(tmpdir(), 'tb-fedb-'))];
  return { argv, settings: parseSettings(argv) };
}

/** A run's own lines and its workers' output are not printed: they would bury the test report. */
const quiet = () => undefined;

/** What a tab's page shows (window.fedStatus of page.ts). */
interface FedStatus {
  state: string;
  client?: string;
  history: Array<{ round: number; globalAccuracy: number; localLoss: number; localAccuracy: number; accepted: boolean }>;
  finalAccuracy?: number;
  tensorsAtEnd?: number;
}

const statusOf = (page: Page) => page.evaluate('window.fedStatus') as Promise<FedStatus>;

/** What a tab shows once its client left (the run ends when the server leaves; a tab leaves just after its last answer). */
async function finalStatusOf(page: Page): Promise<FedStatus> {
  await page.waitForFunction("['done', 'error', 'no-slot'].includes(window.fedStatus?.state)", undefined, { timeout: 30_000 });
  return statusOf(page);
}

async function openTabs(browser: Browser, url: string, n: number): Promise<Page[]> {
  const pages: Page[] = [];
  for (let i = 0; i < n; i++) {
    const page = await browser.newPage();
    page.on('pageerror', (error) => process.stderr.write(`[tab ${i + 1}] ${error.message}\n`));
    await page.goto(url);
    pages.push(page);
  }
  return pages;
}

let browser: Browser;
let nodeOnly: Promise<FederatedRun> | undefined;

/** The same settings with three Node clients: what a run with tabs must match. */
function nodeOnlyRun(): Promise<FederatedRun> {
  nodeOnly ??= (async () => {
    const { argv, settings } = settingsFor();
    const run = await startBrowserFederation({ settings, argv, tabs: 0, nodeClients: 3, say: quiet, output: quiet });
    return run.finished;
  })();
  return nodeOnly;
}

test.before(async () => {
  browser = await launchChromium();
});

test.after.always(async () => {
  await browser?.close();
});

test.serial('federated browser - two tabs and one Node client train together: every round averages all three, and the accuracy matches a Node-only run of the same settings', async (t) => {
  const reference = await nodeOnlyRun();
  const { argv, settings } = settingsFor();
  const run = await startBrowserFederation({ settings, argv, tabs: 2, nodeClients: 1, say: quiet, output: quiet });
  const pages = await openTabs(browser, run.pageUrl, 2);
  const record = await run.finished;
  t.deepEqual(record.curve.map((r) => r.round), Array.from({ length: ROUNDS + 1 }, (_, i) => i), 'every round closed');
  for (const r of record.curve.slice(1)) {
    t.deepEqual(r.participants, ['client1', 'tab1', 'tab2'], `round ${r.round}`);
    t.is(r.closedBy, 'all', `round ${r.round}`);
  }
  const first = record.curve[0]!.testAccuracy;
  t.log(`held-out accuracy per round, with tabs: ${record.curve.map((r) => r.testAccuracy.toFixed(3)).join(' ')}; Node only: ${reference.curve.map((r) => r.testAccuracy.toFixed(3)).join(' ')}`);
  t.true(record.finalTestAccuracy >= 0.7 && record.finalTestAccuracy > first + 0.3, `held-out accuracy ${first} -> ${record.finalTestAccuracy}`);
  // The same slices, seeds and rounds: the tabs (WebAssembly in Chromium) average to what Node clients do.
  t.true(Math.abs(record.finalTestAccuracy - reference.finalTestAccuracy) <= 0.034, `with tabs ${record.finalTestAccuracy}, Node only ${reference.finalTestAccuracy}`);
  // Round by round, within one held-out flower (measured: equal, and the held-out loss within 1e-7).
  reference.curve.forEach((r, i) => {
    const mine = record.curve[i]!;
    t.true(Math.abs(r.testAccuracy - mine.testAccuracy) <= 0.034, `round ${i}: accuracy Node only ${r.testAccuracy}, with tabs ${mine.testAccuracy}`);
    t.true(Math.abs(r.testLoss - mine.testLoss) <= 1e-3, `round ${i}: held-out loss Node only ${r.testLoss}, with tabs ${mine.testLoss}`);
  });
  t.is(record.curve[ROUNDS]!.tensors, record.curve[2]!.tensors, 'no tensors leak on the server');

  // What each page shows: its client, every round, the final global accuracy the server measured.
  const shown = await Promise.all(pages.map(finalStatusOf));
  t.deepEqual(shown.map((s) => s.client).sort(), ['tab1', 'tab2']);
  for (const s of shown) {
    t.is(s.state, 'done');
    t.deepEqual(s.history.map((h) => h.round), Array.from({ length: ROUNDS }, (_, i) => i + 1));
    t.true(s.history.every((h) => h.accepted && Number.isFinite(h.localLoss)));
    t.true(Math.abs(s.finalAccuracy! - record.finalTestAccuracy) < 1e-6, `page ${s.finalAccuracy}, server ${record.finalTestAccuracy}`);
    t.is(s.tensorsAtEnd, 0, 'the page holds no tensors at the end');
  }
  t.regex(await pages[0]!.textContent('#round') ?? '', new RegExp(`^${ROUNDS} / ${ROUNDS}$`));
  await Promise.all(pages.map((p) => p.close()));
});

test.serial('federated browser - a tab closed mid-run costs one round deadline, not the run: the next rounds close as soon as the others submitted', async (t) => {
  const rounds = 8;
  const { argv, settings } = settingsFor(rounds);
  const run = await startBrowserFederation({ settings, argv, tabs: 2, nodeClients: 1, say: quiet, output: quiet });
  const pages = await openTabs(browser, run.pageUrl, 2);
  // Close tab2 once it trained two rounds.
  const byClient = new Map(await Promise.all(pages.map(async (p) => {
    await p.waitForFunction('window.fedStatus?.client !== undefined');
    return [(await statusOf(p)).client!, p] as const;
  })));
  const closing = byClient.get('tab2')!;
  await closing.waitForFunction('window.fedStatus?.history.length >= 2', undefined, { polling: 10 });
  await closing.close();
  const record = await run.finished;
  t.deepEqual(record.curve.map((r) => r.round), Array.from({ length: rounds + 1 }, (_, i) => i), 'every round closed');
  const deadlines = record.curve.filter((r) => r.closedBy === 'deadline');
  t.is(deadlines.length, 1, `rounds closed by the deadline: ${deadlines.map((r) => r.round).join(', ')}`);
  const lost = deadlines[0]!;
  t.true(lost.round > 2 && lost.round <= rounds, `round ${lost.round}`);
  t.deepEqual(lost.missing, ['tab2']);
  t.deepEqual(lost.participants, ['client1', 'tab1']);
  t.true(lost.seconds! >= DEADLINE_MS / 1000 - 0.05 && lost.seconds! < DEADLINE_MS / 1000 + 1.5, `round ${lost.round} took ${lost.seconds} s`);
  for (const r of record.curve.slice(1).filter((r) => r.round !== lost.round)) {
    t.deepEqual(r.participants, r.round < lost.round ? ['client1', 'tab1', 'tab2'] : ['client1', 'tab1'], `round ${r.round}`);
    t.is(r.closedBy, 'all', `round ${r.round}`);
  }
  t.true(record.finalTestAccuracy >= 0.7, `final accuracy ${record.finalTestAccuracy}`);
  const survivor = await finalStatusOf(byClient.get('tab1')!);
  t.is(survivor.state, 'done');
  t.is(survivor.history.length, rounds);
  await byClient.get('tab1')!.close();
});

test.serial('federated browser - a reloaded tab takes its slot up again: it rejoins as the same client and is averaged in the rounds after', async (t) => {
  const rounds = 8;
  const { argv, settings } = settingsFor(rounds);
  const run = await startBrowserFederation({ settings, argv, tabs: 2, nodeClients: 1, say: quiet, output: quiet });
  const pages = await openTabs(browser, run.pageUrl, 2);
  await pages[1]!.waitForFunction('window.fedStatus?.history.length >= 2', undefined, { polling: 10 });
  const client = (await statusOf(pages[1]!)).client!;
  await pages[1]!.reload();
  await pages[1]!.waitForFunction('window.fedStatus?.client !== undefined');
  t.is((await statusOf(pages[1]!)).client, client, 'the same slot after the reload');
  t.is(run.pool.left, 0);
  const record = await run.finished;
  t.deepEqual(record.curve.map((r) => r.round), Array.from({ length: rounds + 1 }, (_, i) => i), 'every round closed');
  t.true(record.curve.filter((r) => r.closedBy === 'deadline').length <= 1, 'the reload cost a deadline at most');
  t.deepEqual(record.curve[rounds]!.participants, ['client1', 'tab1', 'tab2'], 'the reloaded tab is averaged again');
  const after = await finalStatusOf(pages[1]!);
  t.is(after.state, 'done');
  t.true(after.history.length >= 1 && after.history.every((h) => h.accepted), JSON.stringify(after.history.map((h) => h.round)));
  await Promise.all(pages.map((p) => p.close()));
});

test.serial('federated browser - a hostile holder of a tab\'s slot: wrong tickets, another client\'s name, a wrong shape, NaN weights and a flood of waiting calls are refused with InvalidArgumentError, and the rounds go on without waiting for it', async (t) => {
  const tensorsBefore = tf.memory().numTensors;
  const { argv, settings } = settingsFor();
  const run = await startBrowserFederation({ settings, argv, tabs: 2, nodeClients: 1, say: quiet, output: quiet });
  const [page] = await openTabs(browser, run.pageUrl, 1);
  await page!.waitForFunction('window.fedStatus?.client !== undefined');
  // The hostile side asks for a slot as a page would, and gets the last one.
  const answer = await fetch(new URL('/slot', run.pageUrl), { method: 'POST' });
  t.is(answer.status, 200);
  const slot = (await answer.json()) as Slot;
  t.is(slot.client, 'tab2');
  t.deepEqual(Object.keys(slot).sort(), ['client', 'clients', 'index', 'namespace', 'pass', 'servers', 'settings', 'ticket'], 'one password, one ticket: its own');
  // The pool is bounded: no more slots, and no slot by GET.
  t.is((await fetch(new URL('/slot', run.pageUrl), { method: 'POST' })).status, 503);
  t.is((await fetch(new URL('/slot', run.pageUrl))).status, 405);
  // Its password opens its own account only.
  await t.throwsAsync(natsTransport({ servers: run.natsUrl, user: 'tab1', pass: slot.pass, reconnect: false }), { code: 'PERMISSION_DENIED' });

  const agent = await initRpc({ name: slot.client, transport: natsTransport({ servers: run.natsUrl, namespace: slot.namespace, name: slot.client, user: slot.client, pass: slot.pass }) });
  const me: ClientId = { client: slot.client, ticket: slot.ticket };
  await t.throwsAsync(agent.rpcSync('server', join, [{ client: slot.client, ticket: 'guess' }, 40], { timeoutMs: 10_000 }), { instanceOf: InvalidArgumentError });
  await t.throwsAsync(agent.rpcSync('server', join, [{ client: 'client1', ticket: slot.ticket }, 40], { timeoutMs: 10_000 }), { instanceOf: InvalidArgumentError }, 'a name is not a capability');
  await t.throwsAsync(agent.rpcSync('server', join, [me, 1e12], { timeoutMs: 10_000 }), { instanceOf: InvalidArgumentError });
  await agent.rpcSync('server', join, [me, 40], { timeoutMs: 10_000 });
  const model = await agent.rpcSync('server', getGlobal, [me, 1], { timeoutMs: 30_000 });
  t.is(model.round, 1);
  const shapes = model.weights.map((w) => w.shape);
  tf.dispose(model.weights);

  const wrongShape = [tf.zeros([3, 3]), ...shapes.slice(1).map((s) => tf.zeros(s))];
  const wrongShapeError = await t.throwsAsync(agent.rpcSync('server', submitUpdate, [me, 1, wrongShape, 40], { timeoutMs: 10_000 }), { instanceOf: InvalidArgumentError });
  t.regex(wrongShapeError!.message, /weight 0 must be float32 \[4, 16\]/);
  tf.dispose(wrongShape);
  // Asking for round 2 makes the hostile side a live client of the round open now: that round now waits for it.
  const next = await agent.rpcSync('server', getGlobal, [me, 2], { timeoutMs: 30_000 });
  tf.dispose(next.weights);
  // Eight waits for the round after at once: the server holds four and refuses the rest.
  const flood = Promise.allSettled(Array.from({ length: 8 }, () => agent.rpcSync('server', getGlobal, [me, next.round + 1], { timeoutMs: 30_000 })));
  const nan = shapes.map((s) => tf.fill(s, Number.NaN));
  const nanError = await t.throwsAsync(agent.rpcSync('server', submitUpdate, [me, next.round, nan, 40], { timeoutMs: 10_000 }), { instanceOf: InvalidArgumentError });
  t.regex(nanError!.message, /NaN or infinite/);
  tf.dispose(nan);
  const settled = await flood;
  const refusedWaits = settled.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason as Error);
  const heldWaits = settled.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<typeof getGlobal>>>).value);
  t.is(heldWaits.length, 4, refusedWaits.map((e) => e.message).join('; '));
  t.true(refusedWaits.every((e) => e instanceof InvalidArgumentError && /at most 4 calls at a time/.test(e.message)), refusedWaits.map((e) => e.message).join('; '));
  const later = heldWaits[0]!.round;
  heldWaits.forEach((m) => tf.dispose(m.weights));
  // The held waits made it live in the round after: one more refused update, and that round does not wait for it either.
  const tooMany = [...shapes, [1]].map((s) => tf.zeros(s));
  await t.throwsAsync(agent.rpcSync('server', submitUpdate, [me, later, tooMany, 40], { timeoutMs: 10_000 }), { instanceOf: InvalidArgumentError });
  tf.dispose(tooMany);
  await t.throwsAsync(agent.rpcSync('server', getGlobal, [me, 10_000], { timeoutMs: 10_000 }), { instanceOf: InvalidArgumentError }, 'no waiting for a far round');

  const record = await run.finished;
  await agent.shutdown({ graceful: false });
  t.deepEqual(record.curve.map((r) => r.round), Array.from({ length: ROUNDS + 1 }, (_, i) => i), 'every round closed');
  for (const r of record.curve.slice(1)) {
    t.deepEqual(r.participants, ['client1', 'tab1'], `round ${r.round}: the hostile client's weights were never averaged`);
    t.is(r.closedBy, 'all', `round ${r.round} did not wait for the refused client`);
  }
  t.true(record.finalTestAccuracy >= 0.6, `final accuracy ${record.finalTestAccuracy}`);
  t.is(record.exits.server, 'code 0', 'the aggregation server ran to the end');
  t.is((await finalStatusOf(page!)).state, 'done');
  await page!.close();
  t.is(tf.memory().numTensors, tensorsBefore);
});
