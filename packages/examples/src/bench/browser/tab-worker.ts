/**
 * The page of the bench's browser systems (systems/tab-driver.ts bundles it
 * for the browser): a tensorbus worker 'tab' over the transport's browser
 * build (NATS WebSocket). It serves the bench's functions (its callers time
 * round trips into the tab) and times its own round trips to a Node callee
 * with the same code as the Node drivers (tensorbus-ops.ts).
 */
import { tf } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import type { LatencyPlan, LatencySamples } from '../stats.js';
import { tensorbusLatency } from '../systems/tensorbus-ops.js';

let agent: RpcAgent | undefined;

const tabBench = {
  /** Joins `namespace` as 'tab' over WebSocket (declaring a member failed after `failureTimeoutMs` of silence); resolves once `wanted` are members. */
  async start(servers: string, namespace: string, wanted: string[], failureTimeoutMs?: number): Promise<void> {
    agent = await initRpc({ name: 'tab', transport: natsTransport({ servers, namespace, name: 'bench tab' }), rpcTimeoutMs: 120_000, failureTimeoutMs });
    for (let i = 0; !wanted.every((name) => agent!.workers().some((w) => w.name === name)); i++) {
      if (i > 600) throw new Error(`${wanted.join(', ')} did not join within 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  },
  /** Round trips from the tab to `callee`, as a Node driver times them. */
  latency(callee: string, bytes: number, plan: LatencyPlan): Promise<LatencySamples> {
    return tensorbusLatency(agent!, callee, bytes, plan);
  },
  /** TensorFlow.js's backend in the page. */
  backend: () => tf.getBackend(),
  /** Tensors alive in the page. */
  tensors: () => tf.memory().numTensors,
  async stop(): Promise<void> {
    await agent?.shutdown({ timeoutMs: 5_000 }).catch(() => undefined);
  },
};

Object.assign(window, { tabBench, tabBenchReady: true });
