/**
 * What a worker holds now (calls under way, RRefs, autograd contexts,
 * tensors, memory), read on demand by the metrics' gauges and the stats query.
 * @module
 */
import { tf } from '@tensorbus/core';
import { wasmHeapOf } from '@tensorbus/core/internal';
import type { AgentHost } from '../agent/host.js';
import { AUTOGRAD } from '../autograd/plugin.js';
import { RREFS } from '../rref/plugin.js';
import { memoryUsage } from '../platform/process.js';

/** A worker's resources at one moment. */
export interface WorkerResources {
  inFlight: number;
  /** RRefs this worker owns, and user RRefs it holds. */
  rrefs: { owned: number; used: number };
  contexts: number;
  tensors: number;
  tensorBytes: number;
  /** Bytes of the WASM backend's heap; 0 on another backend. */
  wasmHeapBytes: number;
  /** The process's resident set and V8 heap, bytes. */
  rssBytes: number;
  heapUsedBytes: number;
}

/** The WASM backend's heap size, or 0 (read through core's one module that knows tfjs internals). */
function wasmHeap(): number {
  try {
    return wasmHeapOf(tf.backend())?.heap().byteLength ?? 0;
  } catch {
    return 0;
  }
}

/** Reads what `host` holds now. */
export function readResources(host: AgentHost): WorkerResources {
  const memory = tf.memory();
  const rrefs = host.plugin(RREFS).stats();
  const usage = memoryUsage();
  return {
    inFlight: host.callCounts.outstanding,
    rrefs: { owned: rrefs.owners, used: rrefs.users },
    contexts: host.plugin(AUTOGRAD).size,
    tensors: memory.numTensors,
    tensorBytes: memory.numBytes,
    wasmHeapBytes: wasmHeap(),
    rssBytes: usage.rss,
    heapUsedBytes: usage.heapUsed,
  };
}
