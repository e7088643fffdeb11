/**
 * Metrics through the OpenTelemetry metrics API. Counters and histograms are
 * written by the call path (only while a meter provider is registered, see
 * switch.ts); the gauges of each running worker (in-flight calls, RRefs,
 * autograd contexts, tensors, memory) are observable: read only when the
 * SDK collects. Names are listed in docs/observability.md.
 * @module
 */
import { metrics, ValueType, type Attributes, type Counter, type Histogram, type Meter, type MeterProvider } from '@opentelemetry/api';
import { liveWorkers } from './worker-observations.js';
import { readResources } from './resources.js';
import { SCOPE } from './span-scope.js';


/** The instruments the call path writes. */
export interface CallInstruments {
  calls: Counter;
  errors: Counter;
  duration: Histogram;
  sentBytes: Counter;
  receivedBytes: Counter;
}

let provider: MeterProvider | undefined;
let instruments: { client: CallInstruments; server: CallInstruments } | undefined;

function callInstruments(meter: Meter, side: 'client' | 'server'): CallInstruments {
  return {
    calls: meter.createCounter(`tensorbus.rpc.${side}.calls`, { description: `Calls ${side === 'client' ? 'made' : 'served'}, by function and outcome code`, valueType: ValueType.INT }),
    errors: meter.createCounter(`tensorbus.rpc.${side}.errors`, { description: 'Calls that failed, by function and error code', valueType: ValueType.INT }),
    duration: meter.createHistogram(`tensorbus.rpc.${side}.duration`, { description: 'Call latency', unit: 'ms' }),
    sentBytes: meter.createCounter(`tensorbus.rpc.${side}.sent_bytes`, { description: `Bytes of ${side === 'client' ? 'requests' : 'replies'} sent`, unit: 'By', valueType: ValueType.INT }),
    receivedBytes: meter.createCounter(`tensorbus.rpc.${side}.received_bytes`, { description: `Bytes of ${side === 'client' ? 'replies' : 'requests'} received`, unit: 'By', valueType: ValueType.INT }),
  };
}

/** Registers the observable gauges of every running worker on `meter`. */
function observeWorkers(meter: Meter): void {
  const gauge = (name: string, description: string, unit?: string) => meter.createObservableGauge(name, { description, unit, valueType: ValueType.INT });
  const inFlight = gauge('tensorbus.rpc.in_flight', 'Calls awaiting their reply plus calls being served');
  const owned = gauge('tensorbus.rrefs.owned', 'RRefs this worker owns');
  const used = gauge('tensorbus.rrefs.used', 'User RRefs this worker holds');
  const contexts = gauge('tensorbus.autograd.contexts', 'Distributed autograd contexts alive on this worker');
  const tensors = gauge('tensorbus.tensors', 'Tensors alive in this process (tf.memory().numTensors)');
  const tensorBytes = gauge('tensorbus.tensor_memory', 'Bytes of tensors alive in this process', 'By');
  const wasmHeap = gauge('tensorbus.wasm_heap', 'Size of the WASM backend heap (0 on other backends)', 'By');
  meter.addBatchObservableCallback(
    (result) => {
      for (const worker of liveWorkers) {
        const attributes: Attributes = { 'tensorbus.worker': worker.host.name };
        const r = readResources(worker.host);
        result.observe(inFlight, r.inFlight, attributes);
        result.observe(owned, r.rrefs.owned, attributes);
        result.observe(used, r.rrefs.used, attributes);
        result.observe(contexts, r.contexts, attributes);
        result.observe(tensors, r.tensors, attributes);
        result.observe(tensorBytes, r.tensorBytes, attributes);
        result.observe(wasmHeap, r.wasmHeapBytes, attributes);
      }
    },
    [inFlight, owned, used, contexts, tensors, tensorBytes, wasmHeap],
  );
}

/** The instruments of the registered meter provider (made again when another one is registered). */
export function instrumentsNow(): { client: CallInstruments; server: CallInstruments } {
  const current = metrics.getMeterProvider();
  if (instruments === undefined || current !== provider) {
    provider = current;
    const meter = metrics.getMeter(SCOPE);
    instruments = { client: callInstruments(meter, 'client'), server: callInstruments(meter, 'server') };
    observeWorkers(meter);
  }
  return instruments;
}

/** Writes one call that ended into the instruments of `side`. */
export function meterCall(side: 'client' | 'server', worker: string, fn: string, code: string, ms: number, sent: number, received: number): void {
  const m = instrumentsNow()[side];
  const attributes: Attributes = { 'tensorbus.worker': worker, 'rpc.method': fn, 'tensorbus.outcome': code };
  m.calls.add(1, attributes);
  if (code !== 'OK') m.errors.add(1, attributes);
  m.duration.record(ms, attributes);
  if (sent > 0) m.sentBytes.add(sent, attributes);
  if (received > 0) m.receivedBytes.add(received, attributes);
}
