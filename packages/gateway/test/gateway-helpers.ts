/**
 * Helpers of the gateway tests: a worker and a gateway in a fresh namespace
 * of one transport kind, Python's xmlrpc.client in a child process, and raw
 * HTTP posts of hand-written bodies.
 */
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Transport } from '@tensorbus/core';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import { startGateway, type Gateway, type GatewayOptions } from '../src/index.js';
import type { TransportKind } from './helpers.js';
import './fixtures/gateway-functions.js';

const run = promisify(execFile);
let groups = 0;

/** The Python scenarios script (in the source tree: tsc does not copy it). */
export const PY_CLIENT = fileURLToPath(new URL('../../test/fixtures/xmlrpc_client.py', import.meta.url));

/** A worker `w1` and a gateway on `kind`, in a fresh namespace; both stopped at teardown. */
export async function workerAndGateway(
  t: { teardown(fn: () => unknown): void },
  kind: TransportKind,
  options: Partial<GatewayOptions> = {},
  workerNames: string[] = ['w1'],
  wrap: (transport: Transport) => Promise<Transport> = async (transport) => transport,
): Promise<{ workers: RpcAgent[]; gateway: Gateway; lines: string[]; namespace: string; connect: () => ReturnType<TransportKind['create']> }> {
  const namespace = `gw${process.pid}x${++groups}`;
  const connect = () => kind.create({ namespace });
  const workers = await Promise.all(workerNames.map((name) => initRpc({ name, transport: connect(), heartbeatMs: 100, failureTimeoutMs: 1_000, logger: null })));
  t.teardown(() => Promise.all(workers.map((w) => w.shutdown({ graceful: false }).catch(() => undefined))));
  const lines: string[] = [];
  const gateway = await startGateway({ port: 0, connect: async () => wrap(await connect()), logger: { info: (line) => lines.push(line) }, ...options });
  t.teardown(() => gateway.close());
  return { workers, gateway, lines, namespace, connect };
}

/** Runs a scenario of fixtures/xmlrpc_client.py and parses what it printed. */
export async function python(url: string, scenario: string, arg?: string, extra: string[] = [], env: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const args = [PY_CLIENT, url, scenario, ...(arg === undefined ? [] : [arg]), ...extra];
  const { stdout } = await run('python3', args, { encoding: 'utf8', timeout: 60_000, env: { ...process.env, ...env } });
  return JSON.parse(stdout) as Record<string, unknown>;
}

/** POSTs `body` to `url`; resolves with the status and the text of the answer. */
export async function post(url: string, body: string | Uint8Array, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { method: 'POST', body: typeof body === 'string' ? body : new Blob([new Uint8Array(body)]), headers: { 'content-type': 'text/xml', ...headers } });
  return { status: response.status, text: await response.text() };
}

/** POSTs `body` to `url` from the loopback address `from` (e.g. 127.0.0.2: another anonymous client), over a fresh connection. */
export function postFrom(url: string, body: string, from: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', localAddress: from, agent: false, headers: { 'content-type': 'text/xml', 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The faultCode in a fault response, or undefined when it is not one. */
export function faultCodeOf(text: string): number | undefined {
  const m = /<fault>.*?<name>faultCode<\/name><value><int>(-?\d+)<\/int>/s.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** A methodCall body of `method` with raw XML `params` (each a `<value>…</value>`). */
export function callBody(method: string, ...params: string[]): string {
  return `<?xml version="1.0"?><methodCall><methodName>${method}</methodName><params>${params.map((p) => `<param>${p}</param>`).join('')}</params></methodCall>`;
}
