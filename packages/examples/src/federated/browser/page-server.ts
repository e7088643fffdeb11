/**
 * The web side of the browser mode: bundles the page script (page.js) with
 * esbuild for the browser when it starts, refusing a bundle that pulled in
 * a `node:` module, and serves on 127.0.0.1 the page, its bundle, the
 * TensorFlow.js WebAssembly files beside it, and `POST /slot`, which hands
 * each tab a client slot from the run's fixed pool (slots.ts).
 * @module
 */
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { pageHtml } from './page-html.js';
import type { Slot, SlotPool } from './slots.js';

const pageScript = fileURLToPath(new URL('./page.js', import.meta.url));

const TYPES: Record<string, string> = { '.js': 'text/javascript', '.wasm': 'application/wasm' };

/** A page server listening on 127.0.0.1. */
export interface PageServer {
  /** `http://127.0.0.1:<port>/` */
  readonly url: string;
  close(): Promise<void>;
}

/** Writes the page's bundle and the WebAssembly files into a new temporary directory; returns it. */
async function bundlePage(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'tb-fed-page-'));
  const result = await build({ entryPoints: [pageScript], bundle: true, platform: 'browser', format: 'esm', target: 'es2022', outfile: join(dir, 'bundle.js'), metafile: true, logLevel: 'error', minify: true });
  const nodeModules = Object.keys(result.metafile.inputs).filter((input) => input.startsWith('node:'));
  if (nodeModules.length > 0) throw new Error(`the page bundle pulled in Node modules: ${nodeModules.join(', ')}`);
  const wasmDir = dirname(createRequire(import.meta.url).resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm'));
  for (const file of readdirSync(wasmDir).filter((name) => name.endsWith('.wasm'))) copyFileSync(join(wasmDir, file), join(dir, file));
  return dir;
}

/**
 * Serves the page on 127.0.0.1:`port` (0: a free port). `onSlot` hears of
 * each slot handed out.
 */
export async function startPageServer(pool: SlotPool, port = 0, onSlot: (slot: Slot) => void = () => undefined): Promise<PageServer> {
  const dir = await bundlePage();
  const html = pageHtml();
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    const headers = { 'cache-control': 'no-store' };
    if (path === '/slot') {
      // The body, if any, is not read: a slot is the same whatever the tab says.
      if (request.method !== 'POST') return void response.writeHead(405, { ...headers, allow: 'POST' }).end();
      const slot = pool.take();
      if (!slot) return void response.writeHead(503, { ...headers, 'content-type': 'text/plain' }).end('every client slot of this run is taken');
      onSlot(slot);
      return void response.writeHead(200, { ...headers, 'content-type': 'application/json' }).end(JSON.stringify(slot));
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') return void response.writeHead(405, headers).end();
    if (path === '/') return void response.writeHead(200, { ...headers, 'content-type': 'text/html; charset=utf-8' }).end(html);
    const name = path.slice(1);
    // Only the files bundlePage wrote: no paths, no dot files.
    if (!/^[\w-]+(\.[\w-]+)*$/.test(name)) return void response.writeHead(404, headers).end();
    try {
      const body = readFileSync(join(dir, name));
      response.writeHead(200, { ...headers, 'content-type': TYPES[extname(name)] ?? 'application/octet-stream' }).end(body);
    } catch {
      response.writeHead(404, headers).end();
    }
  };
  const server = createServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}/`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
