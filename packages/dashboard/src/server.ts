/**
 * The dashboard's web server: one static page (page.ts, no build step),
 * its state as JSON, and server-sent events pushing the state once per
 * interval while at least one page listens. Loopback by default; requests
 * whose Host header names another host are refused (a web page elsewhere
 * cannot read the namespace through a browser on this machine).
 *
 * What a client can make it hold is bounded: connections and listening pages
 * are shared fairly between addresses (fair-slots.ts: a newcomer evicts the
 * oldest of its own address, or of the busiest one, and is never refused), a
 * connection that does not finish its request within
 * {@link IDLE_TIMEOUT_MS} is closed, and a page that falls more than one
 * update behind (its socket's write buffer still holds a whole update when
 * the next one is due) is dropped: its browser reconnects and starts afresh.
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import { DASHBOARD_PORT } from '@tensorbus/actors/internal';
import type { Collector, DashboardState } from './collector.js';
import { FairSlots } from './fair-slots.js';
import { PAGE } from './page.js';

/** Pages listening at once at most; a newcomer beyond evicts the oldest (of its own address first). */
export const MAX_LISTENERS = 32;
/** Pages listening at once from one address at most. */
export const MAX_LISTENERS_PER_ADDRESS = 8;
/** Connections at once at most (a newcomer beyond evicts the oldest, as for listeners). */
export const MAX_CONNECTIONS = 256;
/** Connections at once from one address at most. */
export const MAX_CONNECTIONS_PER_ADDRESS = 64;
/** A connection has this long to send its request's headers, and a kept-alive one to send its next request, ms. */
export const IDLE_TIMEOUT_MS = 10_000;
/** A page is dropped when more than this many bytes (or one whole update, if more) are still unsent as the next update is due. */
export const MIN_BEHIND_BYTES = 256 * 1024;

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
  /** See {@link IDLE_TIMEOUT_MS} (the default). */
  idleTimeoutMs?: number;
}

/** A running dashboard server. */
export interface DashboardServer {
  /** `http://host:port/`. */
  readonly url: string;
  /** The state pushed last (for tests). */
  readonly last: DashboardState | undefined;
  /** Pages listening now. */
  readonly listening: number;
  close(): Promise<void>;
}

/** Host names of this machine's loopback interface. */
export const LOOPBACK: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** The dashboard's default port (Ray's, so that habits carry over): the `tensorbus` command's default. */
export { DASHBOARD_PORT };

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
  const idleTimeoutMs = options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
  const listeners = new FairSlots<ServerResponse>(MAX_LISTENERS, MAX_LISTENERS_PER_ADDRESS, (response) => response.destroy());
  const connections = new FairSlots<Socket>(MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS, (socket) => socket.destroy());
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
    // A page whose socket still holds a whole update unsent does not read: it is dropped, not buffered for.
    const behind = Math.max(MIN_BEHIND_BYTES, Buffer.byteLength(frame));
    for (const response of [...listeners]) {
      if (response.writableLength > behind) response.destroy();
      else response.write(frame);
    }
  };
  // Polls only while a page listens: nobody watching costs the workers nothing.
  const always = options.poll === 'always';
  const startPolling = () => {
    if (timer !== undefined) return;
    void push();
    timer = setInterval(() => void push(), intervalMs);
  };
  if (always) startPolling();
  const listen = (address: string, response: ServerResponse) => {
    listeners.admit(address, response);
    startPolling();
    response.on('close', () => {
      listeners.release(address, response);
      if (listeners.size === 0 && !always && timer !== undefined) {
        clearInterval(timer);
        timer = undefined;
      }
    });
  };

  // Timeouts are checked this often (Node's default, 30 s, would let an idle connection stay 3 times its timeout).
  const server: Server = createServer({ connectionsCheckingInterval: Math.max(100, Math.min(1_000, idleTimeoutMs / 4)) }, (request, response) => {
    if (request.method !== 'GET' || !hostAllowed(request, host)) {
      response.writeHead(request.method !== 'GET' ? 405 : 403, { 'content-type': 'text/plain' }).end('refused\n');
      return;
    }
    const path = (request.url ?? '/').split('?')[0];
    if (path === '/' || path === '/index.html') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(PAGE);
    } else if (path === '/events') {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
      response.write(': tensorbus dashboard\nretry: 1000\n\n');
      if (last !== undefined) response.write(`data: ${JSON.stringify(last)}\n\n`);
      listen(request.socket.remoteAddress ?? '', response);
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
  server.headersTimeout = idleTimeoutMs;
  server.requestTimeout = idleTimeoutMs;
  server.keepAliveTimeout = Math.min(5_000, idleTimeoutMs);
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    connections.admit(address, socket);
    socket.once('close', () => connections.release(address, socket));
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
    get listening() {
      return listeners.size;
    },
    async close() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      for (const response of [...listeners]) response.end();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections?.();
    },
  };
}
