/**
 * `startNatsServer({ websocket })`: the embedded nats-server also serves NATS
 * over WebSocket, for browser workers, on loopback only (it has no TLS).
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { connect, StringCodec } from 'nats';
import { startNatsServer } from '../src/index.js';
import { freePort } from '../src/testing/index.js';

const wsClient = fileURLToPath(new URL('./fixtures/ws-client.js', import.meta.url));
const run = promisify(execFile);

/** Local addresses (hex `ADDR:PORT` of /proc/net/tcp) listening on `port`. */
function listeners(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols[1]?.endsWith(`:${hexPort}`) && cols[3] === '0A')
    .map((cols) => cols[1]!);
}

test('websocket - startNatsServer({ websocket: true }) serves NATS over WebSocket at wsUrl, to the same bus as url', async (t) => {
  const server = await startNatsServer({ websocket: { quiet: true } });
  t.teardown(() => server.stop());
  t.regex(server.wsUrl!, /^ws:\/\/127\.0\.0\.1:\d+$/);
  const nc = await connect({ servers: server.url });
  t.teardown(() => nc.close());
  const codec = StringCodec();
  nc.subscribe('ws.echo', { callback: (_err, msg) => msg.respond(codec.encode(`pong to ${codec.decode(msg.data)}`)) });
  await nc.flush();
  const { stdout } = await run(process.execPath, ['--experimental-websocket', '--no-warnings', wsClient, server.wsUrl!, 'ws.echo']);
  t.deepEqual(JSON.parse(stdout), { ok: true, answer: 'pong to ping' });
});

test('websocket - without TLS the WebSocket port listens on 127.0.0.1 only, on the port asked for', async (t) => {
  const port = await freePort();
  const server = await startNatsServer({ websocket: { port, quiet: true } });
  t.teardown(() => server.stop());
  t.is(server.wsUrl, `ws://127.0.0.1:${port}`);
  // 0100007F is 127.0.0.1 as /proc/net/tcp writes it; 00000000 would be every address.
  t.deepEqual(listeners(port).map((address) => address.split(':')[0]), ['0100007F']);
});

test('websocket - off by default: no wsUrl; a bad port is refused before anything starts', async (t) => {
  const server = await startNatsServer();
  t.teardown(() => server.stop());
  t.is(server.wsUrl, undefined);
  await t.throwsAsync(startNatsServer({ websocket: { port: 70_000 } }), { instanceOf: RangeError, message: /websocket port/ });
});
