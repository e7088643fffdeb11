/**
 * `tensorbus launch --websocket PORT`: the embedded nats-server also serves
 * WebSocket (browser workers), loopback only, and the workers are told where.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { createConnection } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort } from '@tensorbus/nats-transport/testing';
import { parseArgs } from '../src/cli/args.js';

const cli = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const worker = fileURLToPath(new URL('./fixtures/ws-url-worker.js', import.meta.url));
const run = promisify(execFile);

function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...process.env, TENSORBUS_QUIET: '1', ...extra };
  for (const key of ['NATS_URL', 'TENSORBUS_NAME', 'TENSORBUS_NAMESPACE', 'TENSORBUS_WS_URL']) if (!(key in extra)) delete out[key];
  return out;
}

test('cli - launch takes --websocket PORT (0: any free port); a bad port is refused', (t) => {
  t.like(parseArgs(['launch', '--websocket', '9222', 'x.js']), { websocketPort: 9222, script: 'x.js' });
  t.like(parseArgs(['launch', '--websocket', '0', 'x.js']), { websocketPort: 0 });
  t.is((parseArgs(['launch', 'x.js']) as { websocketPort?: number }).websocketPort, undefined);
  for (const bad of [['launch', '--websocket', 'x', 'x.js'], ['launch', '--websocket', '70000', 'x.js']]) t.throws(() => parseArgs(bad), undefined, bad.join(' '));
});

test('launch - --websocket PORT opens the embedded server on ws://127.0.0.1:PORT, says so, and gives workers TENSORBUS_WS_URL', async (t) => {
  const port = await freePort();
  const { stdout, stderr } = await run(process.execPath, [cli, 'launch', '-n', '1', '--websocket', String(port), worker], { env: env() });
  t.deepEqual(JSON.parse(stdout.replace(/^\[\S+\s*\] /, '')), { wsUrl: `ws://127.0.0.1:${port}` });
  t.regex(stderr, new RegExp(`ws://127\\.0\\.0\\.1:${port} \\(WebSocket without TLS, so loopback only\\)`));
  // The server went with the launcher.
  const refused = await new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => (socket.destroy(), resolve(false)));
    socket.on('error', () => resolve(true));
  });
  t.true(refused);
});

test('launch - --websocket with NATS_URL set exits 2 saying the flag needs the embedded server', async (t) => {
  const error = await t.throwsAsync(run(process.execPath, [cli, 'launch', '--websocket', '0', worker], { env: env({ NATS_URL: 'nats://127.0.0.1:1' }) }));
  t.is((error as { code?: number }).code, 2);
  t.regex((error as { stderr?: string }).stderr ?? '', /--websocket needs the embedded nats-server/);
});
