/**
 * The XML-RPC gateway example: a legacy orchestrator, written in Python with
 * its standard library only (`packages/examples/python/train_via_gateway.py`),
 * trains a model held by tensorbus workers through the gateway. This
 * launcher starts a nats-server (unless NATS_URL is set), a parameter server
 * `ps` and two trainers as processes of their own, the gateway, then the
 * Python script, and stops them all when it ends. Run from the repository
 * root:
 *
 *   npm run gateway-demo
 *
 * Options go to the Python script: --epochs N (default 40), --lr X (default 0.3).
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startNatsServer } from '@tensorbus/nats-transport';
import { startGateway } from '@tensorbus/gateway';

const NAMESPACE = 'gwdemo';
const WORKERS = ['ps', 'trainer0', 'trainer1'];
const workerScript = fileURLToPath(new URL('./worker.js', import.meta.url));
const pythonScript = fileURLToPath(new URL('../../../python/train_via_gateway.py', import.meta.url));
const width = Math.max(...WORKERS.map((n) => n.length), 'python'.length);
const say = (who: string, line: string) => console.log(`[${who.padEnd(width)}] ${line}`);

const external = process.env.NATS_URL || undefined;
const nats = external ? undefined : await startNatsServer();
const natsUrl = external ?? nats!.url;
say('main', `nats-server at ${natsUrl}${external ? ' (NATS_URL)' : ' (embedded)'}, namespace ${NAMESPACE}`);

const children: ChildProcess[] = [];
function prefix(who: string, child: ChildProcess): void {
  for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', (line) => say(who, line));
}

async function startWorker(name: string): Promise<void> {
  const env: NodeJS.ProcessEnv = { ...process.env, TENSORBUS_NAME: name, NATS_URL: natsUrl, TENSORBUS_NAMESPACE: NAMESPACE, TENSORBUS_QUIET: '1' };
  delete env.TENSORBUS_WORLD_SIZE;
  delete env.TENSORBUS_RANK;
  const child = spawn(process.execPath, [workerScript], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  prefix(name, child);
  await new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => line.startsWith('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`worker ${name} exited with ${code} before it was ready`)));
  });
}

let code = 1;
const gatewayLog: string[] = [];
const gateway = await Promise.all(WORKERS.map(startWorker)).then(() =>
  startGateway({ namespace: NAMESPACE, nats: natsUrl, port: 0, logger: { info: (line) => gatewayLog.push(line) } }),
);
try {
  say('main', `gateway ${gateway.name} at ${gateway.url}`);
  const python = spawn('python3', [pythonScript, gateway.url, ...process.argv.slice(2)], { stdio: ['ignore', 'pipe', 'pipe'] });
  prefix('python', python);
  code = await new Promise<number>((resolve) => python.once('exit', (c) => resolve(c ?? 1)));
  const faults = gatewayLog.filter((line) => line.includes('outcome=fault')).length;
  say('main', `the gateway served ${gatewayLog.length} requests (${faults} faults); python exited with ${code}`);
} finally {
  await gateway.close();
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(children.map((child) => (child.exitCode === null ? new Promise((resolve) => child.once('exit', resolve)) : undefined)));
  await nats?.stop();
}
process.exit(code);
