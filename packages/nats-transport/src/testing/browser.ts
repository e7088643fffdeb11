/**
 * Headless Chromium for tests, through playwright-core on the system's
 * browser (Debian's `chromium`, or CHROMIUM=/path): nothing is downloaded.
 * Also bundles a page script with esbuild for the browser (the packages'
 * "browser" exports) and serves it on 127.0.0.1 with TensorFlow.js's
 * WebAssembly files beside it, as a user's page would be served. A missing
 * Chromium fails with how to install it: browser tests are never skipped.
 * @module
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { build } from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';

/** The Chromium to use, or an error saying how to install one. */
export function findChromium(): string {
  const candidate = process.env.CHROMIUM ?? '/usr/bin/chromium';
  const probe = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
  if (probe.status !== 0) {
    throw new Error(`browser tests need Chromium: '${candidate} --version' failed (${probe.error?.message ?? probe.stderr}). Install it with 'apt-get install -y chromium' (Debian), or set CHROMIUM=/path/to/chromium`);
  }
  return candidate;
}

/** A page in a headless Chromium of its own. */
export interface BrowserPage {
  /** The playwright page, for what the helpers below do not cover. */
  readonly page: Page;
  /** The JSON value of `expression` evaluated in the page (awaited when it is a promise). */
  evaluate<T>(expression: string): Promise<T>;
  /** Writes a PNG of the whole page to `path`. */
  screenshot(path: string): Promise<void>;
  /** Closes the page and its browser. */
  close(): Promise<void>;
}

/** Starts a fresh headless Chromium (its own profile, no network beyond what pages load). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: findChromium(),
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** Opens `url` in a fresh headless Chromium; page errors and console errors are echoed to stderr. */
export async function openPage(url: string, browser?: Browser): Promise<BrowserPage> {
  const own = browser === undefined;
  const chrome = browser ?? (await launchChromium());
  const page = await chrome.newPage({ viewport: { width: 1500, height: 1000 } });
  page.on('pageerror', (error) => process.stderr.write(`[page] ${error.message}\n`));
  page.on('console', (message) => {
    if (message.type() === 'error') process.stderr.write(`[page console] ${message.text()}\n`);
  });
  await page.goto(url);
  return {
    page,
    evaluate: <T>(expression: string) => page.evaluate(expression) as Promise<T>,
    screenshot: async (path) => void (await page.screenshot({ path, fullPage: true })),
    close: async () => {
      await page.close().catch(() => undefined);
      if (own) await chrome.close();
    },
  };
}

/** A page script bundled and served on 127.0.0.1. */
export interface ServedPage {
  /** `http://127.0.0.1:<port>/` (the page loads `bundle.js` as a module). */
  readonly url: string;
  close(): Promise<void>;
}

const TYPES: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.map': 'application/json' };

/** Options of {@link servePage}. */
export interface ServePageOptions {
  /**
   * The project whose `node_modules` gives TensorFlow.js's WebAssembly files
   * (a directory); by default the one this helper is installed in. The
   * bundle's imports resolve from `entry`'s own directory either way.
   */
  project?: string;
}

/**
 * Bundles `entry` (a compiled .js) with esbuild for the browser and serves it
 * on 127.0.0.1 beside TensorFlow.js's WebAssembly files. Refuses a bundle
 * that pulled in a `node:` module.
 */
export async function servePage(entry: string, title = 'tensorbus test page', options: ServePageOptions = {}): Promise<ServedPage> {
  const dir = mkdtempSync(join(tmpdir(), 'tb-page-'));
  const result = await build({ entryPoints: [entry], bundle: true, platform: 'browser', format: 'esm', target: 'es2022', outfile: join(dir, 'bundle.js'), metafile: true, logLevel: 'error' });
  const nodeModules = Object.keys(result.metafile.inputs).filter((input) => input.startsWith('node:'));
  if (nodeModules.length > 0) throw new Error(`the page bundle pulled in Node modules: ${nodeModules.join(', ')}`);
  const resolveFrom = options.project === undefined ? import.meta.url : join(options.project, 'package.json');
  const wasmDir = dirname(createRequire(resolveFrom).resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
  for (const file of readdirSync(wasmDir).filter((name) => name.endsWith('.wasm'))) copyFileSync(join(wasmDir, file), join(dir, file));
  writeFileSync(join(dir, 'index.html'), `<!doctype html><meta charset="utf-8"><title>${title}</title><link rel="icon" href="data:,"><body><script type="module" src="bundle.js"></script></body>`);
  const server = createServer((request, response) => {
    const name = new URL(request.url ?? '/', 'http://x').pathname.slice(1) || 'index.html';
    // Only files this helper wrote: no paths, no dot files.
    if (!/^[\w.-]+$/.test(name) || name.startsWith('.')) return void response.writeHead(404).end();
    try {
      const body = readFileSync(join(dir, name));
      response.writeHead(200, { 'content-type': TYPES[extname(name)] ?? 'application/octet-stream' }).end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
