/**
 * What the dashboard shows once workers are gone, in headless Chromium over
 * real worker processes: a worker that departs with a call in flight is not
 * shown with that call in flight any more (its last answer is no longer live
 * figures), and with no worker up the calls/s section says so instead of
 * staying blank; the last worker to leave is shown as left. The page's
 * screenshot is kept (dist/test/dashboard-departed.png).
 */
import test from 'ava';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { natsTransport } from '@tensorbus/nats-transport';
import { startDashboard } from '../src/dashboard.js';
import { hold, stop } from './fixtures/functions.js';
import { openPage, untilShown, type BrowserPage } from './browser.js';
import { startProcessGroup, stopProcessGroups } from './helpers.js';

test.after.always(stopProcessGroups);

/** How long the page is given to show a change here (a failure is declared only after the detector's timeout). */
const DEPARTURE_WAIT_MS = 20_000;

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
const screenshotPath = fileURLToPath(new URL('./dashboard-departed.png', import.meta.url));

type Row = { worker: string; state: string; inFlight: string | null; text: string };
const ROWS = `[...document.querySelectorAll('#workers-table tbody tr')].map((r) => ({ worker: r.dataset.worker, state: r.dataset.state, inFlight: r.querySelector('[data-field=in-flight]')?.textContent ?? null, text: r.textContent }))`;

test.serial('dashboard - after workers leave: no call is shown in flight on a departed worker, and the calls/s section says nobody is up', async (t) => {
  const { agent, children, serverUrl, namespace } = await startProcessGroup(workerScript, 3);
  const dashboard = await startDashboard({ transport: await natsTransport({ servers: serverUrl, namespace }), namespace, server: serverUrl, port: 0, intervalMs: 500 });
  let page: BrowserPage | undefined;
  try {
    page = await openPage(dashboard.url);
    await untilShown<Row[]>(page, ROWS, (r) => r.length === 3 && r.every((w) => w.state === 'up' && w.inFlight !== null), 'three workers up', DEPARTURE_WAIT_MS);
    // p1 serves a call that never ends before it dies: the page sees it in flight.
    const held = agent.rpcSync('p1', hold, [120_000], { timeoutMs: 0 }).catch(() => undefined);
    await untilShown<Row[]>(page, ROWS, (r) => r.find((w) => w.worker === 'p1')?.inFlight === '1', 'the call in flight on p1', DEPARTURE_WAIT_MS);
    children[0]!.kill('SIGKILL');
    const failed = await untilShown<Row[]>(page, ROWS, (r) => r.find((w) => w.worker === 'p1')?.state === 'failed', "p1's failure", DEPARTURE_WAIT_MS);
    const p1 = failed.find((w) => w.worker === 'p1')!;
    t.is(p1.inFlight, null, `a failed worker has no calls in flight: ${p1.text}`);
    t.regex(p1.text, /departed/);
    await held;
    // Everyone else leaves: p2 asked to, p0 (this process) shuts down.
    await agent.rpcSync('p2', stop, []);
    await agent.shutdown({ timeoutMs: 10_000 });
    const none = await untilShown<Row[]>(page, ROWS, (r) => r.every((w) => w.state !== 'up'), 'every worker departed', DEPARTURE_WAIT_MS);
    // p0 left last: no peer was left to report it, its own signed goodbye says it left (not silence, 'gone').
    t.is(none.find((w) => w.worker === 'p0')?.state, 'left', 'the last worker to leave is shown as left');
    t.is(none.find((w) => w.worker === 'p2')?.state, 'left');
    // One event per departure: p1's failure is not also listed as a silence ('gone').
    const events = await page.evaluate<string[]>(`[...document.querySelectorAll('#events li')].map((li) => li.dataset.event + ' ' + li.dataset.worker)`);
    t.deepEqual(events.filter((e) => / p1$/.test(e)), ['fail p1'], events.join(', '));
    t.deepEqual(none.filter((w) => w.inFlight !== null), [], 'no departed worker shows live figures');
    t.is(await page.evaluate<string>(`document.getElementById('count').dataset.up`), '0');
    t.is(await page.evaluate<number>(`document.querySelectorAll('#rates .card').length`), 0);
    t.regex(await page.evaluate<string>(`document.getElementById('rates').textContent`), /No worker is up/, 'the calls/s section says why it is empty');
    await page.screenshot(screenshotPath);
    const png = readFileSync(screenshotPath);
    t.true(png.length > 10_000 && png.subarray(1, 4).toString() === 'PNG', `a screenshot of ${png.length} bytes`);
  } finally {
    await page?.close();
    await dashboard.close();
  }
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
});
