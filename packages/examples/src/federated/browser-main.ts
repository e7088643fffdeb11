/**
 * `npm run federated-browser`: the federated example with browser tabs as
 * clients (browser-run.ts). Prints the page's address; every tab opened on it
 * takes one of the run's client slots (`--tabs`, default 2), and round 1
 * opens once all of them and the Node clients (`--node-clients`, default 1)
 * joined. `--headless` opens the tabs itself in the system's Chromium
 * (playwright-core, nothing downloaded) and prints what they log. Run from
 * the repository root:
 *
 *   npm run federated-browser -- --headless --rounds 20
 *
 * Options: --tabs, --node-clients, --headless, --port (the page server's,
 * default a free one), --screenshot <png> (with --headless: the first tab
 * once the run ended), and the federated example's own (--rounds,
 * --deadline-ms, --local-epochs, --batch-size, --lr, --skew, --skip, --crash
 * for Node clients, --seed, --out).
 * @module
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { launchChromium } from '@tensorbus/nats-transport/testing/browser';
import type { Browser, Page } from 'playwright-core';
import { flagReader } from '../common/args.js';
import { startBrowserFederation } from './browser-run.js';
import { writeRun } from './report.js';
import { parseSettings } from './settings.js';

const argv = process.argv.slice(2);
const flag = flagReader(argv);
const settings = parseSettings(argv);
const tabs = Number(flag('--tabs', '2'));
const nodeClients = Number(flag('--node-clients', '1'));
const headless = argv.includes('--headless');
const screenshot = flag('--screenshot', '');
const say = (line: string) => console.log(`[main  ] ${line}`);

const run = await startBrowserFederation({ settings, argv, tabs, nodeClients, httpPort: Number(flag('--port', '0')), say }).catch((error: Error) => {
  say(`cannot start: ${error.message}`);
  process.exit(2);
});
let browser: Browser | undefined;
const pages: Page[] = [];
if (headless && tabs > 0) {
  browser = await launchChromium();
  for (let i = 0; i < tabs; i++) {
    const page = await browser.newPage({ viewport: { width: 820, height: 640 } });
    const tag = `[page ${i + 1}] `;
    page.on('console', (message) => console.log(tag + message.text()));
    page.on('pageerror', (error) => console.error(tag + error.message));
    await page.goto(run.pageUrl);
    pages.push(page);
  }
  say(`opened ${tabs} tabs on ${run.pageUrl} in headless Chromium`);
} else if (tabs > 0) {
  say(`open ${run.pageUrl} in ${tabs} browser tab(s) on this machine: each tab becomes a client; round 1 starts once all have joined`);
}

try {
  const record = await run.finished;
  // The server left after answering the last round; each tab leaves just after (up to its shutdown's 10 s).
  await Promise.all(pages.map((page) => page.waitForFunction("window.fedStatus.state !== 'training' && window.fedStatus.state !== 'waiting'", undefined, { timeout: 15_000 }).catch(() => undefined)));
  const chart = writeRun(settings.out, record);
  if (screenshot && pages[0]) {
    mkdirSync(dirname(resolve(screenshot)), { recursive: true });
    await pages[0].screenshot({ path: screenshot });
    say(`screenshot of the first tab: ${screenshot}`);
  }
  say(`final test accuracy ${(100 * record.finalTestAccuracy).toFixed(1)}% after ${record.curve.length - 1} rounds in ${record.seconds.toFixed(1)} s (server backend ${record.backend})`);
  say(`results written to ${chart} and federated.json`);
} catch (error) {
  say(`the run failed: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  await browser?.close();
}
