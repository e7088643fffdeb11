/**
 * The tensorbus caller process of the benchmark (the "driver" agent).
 *
 *   --transport nats    joins the NATS server at NATS_URL as 'driver' and
 *                       calls 'callee' (tensorbus-callee.js, another process)
 *   --transport local   runs 'driver' and 'callee' in this process on the
 *                       in-process transport
 *
 * Answers the commands latency, rate, rref, autograd, growth (local only:
 * N more caller agents in this process), backend, sameHost, path (the
 * transport's data-plane counts: direct calls, shared memory), tensors.
 * @module
 */
import { localTransport, tensorBackend, tf } from '@tensorbus/core';
import { natsTransport, sharedMemoryStatus, unixSocketsByDefault, type DirectStats } from '@tensorbus/nats-transport';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import { argValue, directOptions, namespaceOption, serveCommands } from '../process/child-channel.js';
import { callForDuration, type LatencyPlan, type RatePlan } from '../stats.js';
import { liveTensors, noop } from './tensorbus-functions.js';
import { tensorbusAsyncRate, tensorbusAutograd, tensorbusLatency, tensorbusRrefRate } from './tensorbus-ops.js';

const transportKind = argValue('--transport');
const CALLEE = 'callee';
const rpcTimeoutMs = 120_000;

const agents: RpcAgent[] = [];
const driver =
  transportKind === 'nats'
    ? await initRpc({ name: 'driver', transport: natsTransport({ servers: process.env.NATS_URL!, name: 'bench-driver', ...namespaceOption(), ...directOptions() }), rpcTimeoutMs })
    : await initRpc({ name: 'driver', transport: localTransport(), rpcTimeoutMs });
agents.push(driver);
if (transportKind === 'local') agents.push(await initRpc({ name: CALLEE, transport: localTransport(), rpcTimeoutMs }));
// Wait until the callee is a member (on NATS it is another process).
for (let i = 0; !driver.workers().some((w) => w.name === CALLEE); i++) {
  if (i > 600) throw new Error(`the callee did not join within 30 s`);
  await new Promise((resolve) => setTimeout(resolve, 50));
}

/** N more caller agents here, each calling the no-op one after another for a while (local transport only). */
async function localGrowth(params: Record<string, unknown>) {
  const n = Number(params.agents);
  const callers = await Promise.all(Array.from({ length: n }, (_, i) => initRpc({ name: `grower-${i}`, transport: localTransport(), rpcTimeoutMs })));
  try {
    return await Promise.all(callers.map((a) => callForDuration(() => a.rpcSync(CALLEE, noop, []), Number(params.warmupMs), Number(params.durationMs))));
  } finally {
    await Promise.all(callers.map((a) => a.shutdown({ timeoutMs: 5_000 }).catch(() => undefined)));
  }
}

serveCommands(
  {
    latency: (p) => tensorbusLatency(driver, CALLEE, Number(p.bytes), p.plan as LatencyPlan),
    rate: (p) => tensorbusAsyncRate(driver, CALLEE, p.plan as RatePlan),
    rref: (p) => tensorbusRrefRate(driver, CALLEE, p.plan as RatePlan),
    autograd: (p) => tensorbusAutograd(driver, CALLEE, p.plan as LatencyPlan, p.last !== false),
    growth: (p) => {
      if (transportKind !== 'local') throw new Error('growth over NATS runs in growth-caller processes');
      return localGrowth(p);
    },
    backend: () => tensorBackend(),
    path: () => {
      // What the calls to the callee went over beside the bus, counted by the transport.
      const stats = (driver.transport as { directStats?: DirectStats }).directStats;
      return stats ?? null;
    },
    sameHost: () => {
      if (transportKind !== 'nats') return 'n/a (one process)';
      const { available, reason } = sharedMemoryStatus();
      const medium = unixSocketsByDefault() ? 'a Unix socket' : 'TCP';
      return available ? `shared memory, over ${medium}` : `${medium} (${reason})`;
    },
    tensors: async () => ({ caller: tf.memory().numTensors, callee: await driver.rpcSync(CALLEE, liveTensors, []) }),
  },
  { pid: process.pid },
  async () => {
    await Promise.all(agents.map((a) => a.shutdown({ timeoutMs: 10_000 }).catch(() => undefined)));
  },
);
