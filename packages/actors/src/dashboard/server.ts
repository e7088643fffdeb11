/**
 * The dashboard's web server: one static page (page.ts, no build step),
 * its state as JSON, and server-sent events pushing the state once per
 * interval while at least one page listens. Loopback by default; requests
 * whose Host header names another host are refused (a web page elsewhere
 * cannot read the namespace through a browser on this machine).
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Collector, DashboardState } from './collector.js';
import { PAGE } from './page.js';

/** Pages listening at once at most; more get 503. */
export const MAX_LISTENERS = 32;

/** Options of {@link startDashboardServer}. */
export interface DashboardServerOptions {
  /** Address to listen on (default 127.0.0.1). */
  host?: string;
  /** Port (default {@link DASHBOARD_PORT}; 0 for any free one). */
  port?: number;
  /** Poll and push interval, ms (default 1000). */
  intervalMs?: number;
  /**
   * `'watched'` (default): poll only while a page listens. `'always'`: from
   * the start (`tensorbus launch --dashboard`: a page opened later still
   * shows the run's reported values from its beginning).
   */
  poll?: 'watched' | 'always';
}

/** A running dashboard server. */
export interface DashboardServer {
  /** `http://host:port/`. */
  readonly url: string;
  /** The state pushed last (for tests). */
  readonly last: DashboardState | undefined;
  close(): Promise<void>;
}

/** Host names of this machine's loopback interface. */
export const LOOPBACK: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** The dashboard's default port (Ray's, so that habits carry over). */
export const DASHBOARD_PORT = 8265;

/** True when the request's Host header names this server: a loopback name, or the address it listens on. */
function hostAllowed(request: IncomingMessage, listenHost: string): boolean {
  const header = request.headers.host;
  if (typeof header !== 'string' || header.length > 300) return false;
  const name = header.startsWith('[') ? header.slice(0, header.indexOf(']') + 1) : header.split(':')[0]!;
  return LOOPBACK.has(name) || name === listenHost;
}

/** Serves the dashboard of `collector` over HTTP. */
export async function startDashboardServer(collector: Collector, options: DashboardServerOptions = {}): Promise<DashboardServer> {
  const host = options.host ?? '127.0.0.1';
  const intervalMs = options.intervalMs ?? 1_000;
  const listeners = new Set<ServerResponse>();
  let last: DashboardState | undefined;
  let lastAt = 0;
  let timer: NodeJS.Timeout | undefined;

  const push = async () => {
    try {
      last = await collector.poll();
      lastAt = Date.now();
    } catch {
      return;
    }
    const frame = `data: ${JSON.stringify(last)}\n\n`;
    for (const response of listeners) response.write(frame);
  };
  // Polls only while a page listens: nobody watching costs the workers nothing.
  const always = options.poll === 'always';
  const startPolling = () => {
    if (timer !== undefined) return;
    void push();
    timer = setInterval(() => void push(), intervalMs);
  };
  if (always) startPolling();
  const listen = (response: ServerResponse) => {
    listeners.add(response);
    startPolling();
    response.on('close', () => {
      listeners.delete(response);
      if (listeners.size === 0 && !always && timer !== undefined) {
        clearInterval(timer);
        timer = undefined;
      }
    });
  };

  const server: Server = createServer((request, response) => {
    if (request.method !== 'GET' || !hostAllowed(request, host)) {
      response.writeHead(request.method !== 'GET' ? 405 : 403, { 'content-type': 'text/plain' }).end('refused\n');
      return;
    }
    const path = (request.url ?? '/').split('?')[0];
    if (path === '/' || path === '/index.html') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(PAGE);
    } else if (path === '/events') {
      if (listeners.size >= MAX_LISTENERS) {
        response.writeHead(503, { 'content-type': 'text/plain' }).end('too many pages listening\n');
        return;
      }
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
      response.write(': tensorbus dashboard\n\n');
      if (last !== undefined) response.write(`data: ${JSON.stringify(last)}\n\n`);
      listen(response);
    } else if (path === '/state.json') {
      // A state polled within the interval is served as it is: requests do not each poll the namespace.
      const state = last !== undefined && Date.now() - lastAt < intervalMs ? Promise.resolve(last) : collector.poll();
      state.then(
        (state) => response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(state)),
        () => response.writeHead(500).end(),
      );
    } else {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? DASHBOARD_PORT, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}/`,
    get last() {
      return last;
    },
    async close() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      for (const response of listeners) response.end();
      listeners.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections?.();
    },
  };
}
