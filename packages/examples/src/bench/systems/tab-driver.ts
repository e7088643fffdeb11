/**
 * The driver process of the bench's browser systems: a headless Chromium
 * (playwright-core on the system's browser) whose page (browser/tab-worker.ts,
 * bundled with esbuild for the browser) is the tensorbus worker 'tab' on the
 * nats-server's WebSocket port (TENSORBUS_BENCH_WS_URL), and a Node agent
 * 'driver' on its TCP port (NATS_URL).
 *
 *   --direction to-node   the page times its round trips to 'callee' (tensorbus-callee.js, another process)
 *   --direction to-tab    the Node agent here times its round trips into the page
 *
 * Answers the commands latency, backend (the page's) and tensors.
 * @module
 */
import { fileURLToPath } from 'node:url';
import { tf } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { openPage, servePage } from '@tensorbus/nats-transport/testing/browser';
import { initRpc } from '@tensorbus/actors';
import { argValue, failureTimeoutOption, namespaceOption, serveCommands } from '../process/child-channel.js';
import type { LatencyPlan, LatencySamples } from '../stats.js';
import { tensorbusLatency } from './tensorbus-ops.js';

const direction = argValue('--direction');
if (direction !== 'to-node' && direction !== 'to-tab') throw new Error(`--direction to-node or to-tab, not '${direction}'`);
const wsUrl = process.env.TENSORBUS_BENCH_WS_URL;
if (!wsUrl) throw new Error('TENSORBUS_BENCH_WS_URL is not set: the nats-server needs a WebSocket port');
const namespace = namespaceOption().namespace ?? 'default';
const { failureTimeoutMs } = failureTimeoutOption();

const driver = await initRpc({ name: 'driver', transport: natsTransport({ servers: process.env.NATS_URL!, name: 'bench tab driver', ...namespaceOption(), direct: false }), rpcTimeoutMs: 120_000, failureTimeoutMs });
const served = await servePage(fileURLToPath(new URL('../browser/tab-worker.js', import.meta.url)), 'tensorbus bench tab');
const tab = await openPage(served.url);
await tab.page.waitForFunction('window.tabBenchReady === true');
await tab.evaluate(`tabBench.start(${JSON.stringify(wsUrl)}, ${JSON.stringify(namespace)}, ${JSON.stringify(direction === 'to-node' ? ['callee'] : ['driver'])}, ${failureTimeoutMs ?? 'undefined'})`);
for (let i = 0; !driver.workers().some((w) => w.name === 'tab'); i++) {
  if (i > 600) throw new Error('the tab did not join within 30 s');
  await new Promise((resolve) => setTimeout(resolve, 50));
}

serveCommands(
  {
    latency: (p) =>
      direction === 'to-tab'
        ? tensorbusLatency(driver, 'tab', Number(p.bytes), p.plan as LatencyPlan)
        : tab.evaluate<LatencySamples>(`tabBench.latency('callee', ${Number(p.bytes)}, ${JSON.stringify(p.plan)})`),
    backend: () => tab.evaluate<string>('tabBench.backend()'),
    tensors: async () => ({ driver: tf.memory().numTensors, tab: await tab.evaluate<number>('tabBench.tensors()') }),
  },
  { pid: process.pid },
  async () => {
    await tab.evaluate('tabBench.stop()').catch(() => undefined);
    await tab.close();
    await served.close();
    await driver.shutdown({ timeoutMs: 5_000 }).catch(() => undefined);
  },
);
