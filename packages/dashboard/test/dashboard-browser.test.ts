/**
 * The dashboard in a real browser: headless Chromium (Debian's `chromium`)
 * opens the page while a namespace of real worker processes runs, and the
 * test reads what the page shows as it updates live: the workers' names, a
 * call count that rises, a reported value, a worker's departure and another's
 * failure (killed); axis labels of a worker without calls (0 and 1, never
 * 1e-9); the workers table within a 1,400-pixel window. The page's
 * screenshots are kept (dist/test/dashboard.png, dashboard-1400.png). Without Chromium the
 * test fails saying how to install it.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { natsTransport } from '@tensorbus/nats-transport';
import { reportStat } from '@tensorbus/actors';
import { startDashboard } from '../src/dashboard.js';
import { echo, stop } from './fixtures/functions.js';
import { openPage, untilShown, type BrowserPage } from './browser.js';
import { startProcessGroup, stopProcessGroups } from './helpers.js';

test.after.always(stopProcessGroups);

const workerScript = fileURLToPath(new URL('./fixtures/worker.js', import.meta.url));
const screenshotPath = fileURLToPath(new URL('./dashboard.png', import.meta.url));
const screenshot1400Path = fileURLToPath(new URL('./dashboard-1400.png', import.meta.url));

/** Opens the page again in an iframe 1,400 px wide; resolves, once it shows three workers with stats, with the widths of its workers table, its page and its viewport. */
const IN_1400_PX = `new Promise((resolve) => {
  const frame = document.createElement('iframe');
  frame.id = 'in-1400';
  frame.style.cssText = 'width:1400px;height:700px;border:0;display:block';
  frame.src = location.href;
  frame.onload = () => {
    const check = () => {
      const d = frame.contentDocument;
      const table = d.getElementById('workers-table');
      if (table && table.querySelectorAll('tbody [data-field=calls]').length === 3) resolve({ table: table.scrollWidth, page: d.documentElement.scrollWidth, viewport: d.documentElement.clientWidth });
      else setTimeout(check, 100);
    };
    check();
  };
  document.body.prepend(frame);
})`;

type Row = { worker: string; state: string; calls: string | null };
const ROWS = `[...document.querySelectorAll('#workers-table tbody tr')].map((r) => ({ worker: r.dataset.worker, state: r.dataset.state, calls: r.querySelector('[data-field=calls]')?.textContent ?? null }))`;

test.serial('dashboard - in headless Chromium: shows the workers, a rising call count, a reported value, a departure and a failure as they happen', async (t) => {
  const { agent, children, serverUrl, namespace } = await startProcessGroup(workerScript, 3);
  const dashboard = await startDashboard({ transport: await natsTransport({ servers: serverUrl, namespace }), namespace, server: serverUrl, port: 0, intervalMs: 500 });
  let calling = true;
  let step = 0;
  const traffic = (async () => {
    while (calling) {
      await agent.rpcSync('p1', echo, [step]).catch(() => undefined);
      reportStat(agent, 'loss', 1 / ++step);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  let page: BrowserPage | undefined;
  try {
    page = await openPage(dashboard.url);
    const rows = await untilShown<Row[]>(page, ROWS, (r) => r.length === 3 && r.every((w) => w.state === 'up' && w.calls !== null), 'three workers up');
    t.deepEqual(rows.map((r) => r.worker), ['p0', 'p1', 'p2']);
    t.is(await page.evaluate<string>(`document.getElementById('count').dataset.up`), '3');
    // p2 serves and makes no calls: its calls/s chart is all zeros, and its axis says 0 and 1, not 1e-9.
    await untilShown<number>(page, `document.querySelectorAll('#rates .card').length`, (n) => n === 3, 'three calls/s charts');
    const ticks = await page.evaluate<string[]>(`[...document.querySelectorAll('#rates .tick, #learning .tick')].map((t) => t.textContent)`);
    t.true(ticks.length >= 6, ticks.join(' '));
    t.deepEqual(ticks.filter((label) => /e[-+]?\d/.test(label)), [], `axis labels: ${ticks.join(' ')}`);
    // The page in a 1,400-pixel viewport (an iframe of that width: the driver's window is wider): the workers table fits.
    const fit = await page.evaluate<{ table: number; page: number; viewport: number }>(`${IN_1400_PX}`);
    t.true(fit.viewport > 1350 && fit.viewport <= 1400, `a viewport of ${fit.viewport} px (1,400 less a scroll bar)`);
    t.true(fit.table <= 1400 && fit.table <= fit.viewport, `the workers table is ${fit.table} px wide in a 1,400-px window`);
    t.true(fit.page <= fit.viewport, `the page is ${fit.page} px wide in a 1,400-px window`);
    await page.screenshot(screenshot1400Path);
    await page.evaluate(`document.getElementById('in-1400').remove(), true`);
    const calls = (r: Row[]) => Number(r.find((w) => w.worker === 'p1')!.calls);
    const before = calls(rows);
    const later = await untilShown<Row[]>(page, ROWS, (r) => calls(r) > before + 20, 'the call count of p1 rising');
    t.true(calls(later) > before, `p1 served ${before} then ${calls(later)} calls`);
    await untilShown<string | null>(page, `document.querySelector('[data-stat=loss] h3')?.textContent ?? null`, (h) => h !== null, 'the reported loss');
    t.regex(await page.evaluate<string>(`document.querySelector('[data-stat=loss] h3').textContent`), /^loss /);
    t.true(await page.evaluate<number>(`document.querySelectorAll('[data-stat=loss] polyline').length`) >= 1, 'the loss is plotted');

    await agent.rpcSync('p2', stop, []);
    const gone = await untilShown<Row[]>(page, ROWS, (r) => r.find((w) => w.worker === 'p2')?.state !== 'up', "p2's departure");
    t.true(['left', 'gone', 'failed'].includes(gone.find((w) => w.worker === 'p2')!.state));
    t.is(gone.filter((w) => w.state === 'up').length, 2);
    await untilShown<boolean>(page, `!!document.querySelector('#events li[data-worker=p2][data-event=leave], #events li[data-worker=p2][data-event=gone]')`, (v) => v, 'the departure among the events');
    // A worker killed outright: its peers declare it failed, and the page says so.
    children[0]!.kill('SIGKILL');
    await untilShown<Row[]>(page, ROWS, (r) => r.find((w) => w.worker === 'p1')?.state === 'failed', "p1's failure");
    await untilShown<boolean>(page, `!!document.querySelector('#events li[data-worker=p1][data-event=fail]')`, (v) => v, 'the failure among the events');
    await page.screenshot(screenshotPath);
    const png = readFileSync(screenshotPath);
    t.true(png.length > 10_000 && png.subarray(1, 4).toString() === 'PNG', `a screenshot of ${png.length} bytes`);
  } finally {
    calling = false;
    await traffic;
    await page?.close();
    await dashboard.close();
  }
  await agent.rpcSync('p1', stop, []).catch(() => undefined);
  await agent.shutdown({ timeoutMs: 10_000 }).catch(() => undefined);
  await Promise.all(children.map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
});
