/**
 * The thread of a beacon (see beacon.ts): its own NATS connection, one
 * message every interval, numbered from the counter it shares with the main
 * thread and signed with the worker's key. It touches no tensors and loads no
 * TensorFlow.js: it runs while the main thread computes.
 * @module
 */
import { sign } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { Packr } from 'msgpackr';
import { connect } from 'nats';
import { connectionOptions } from '../options.js';
import type { BeaconThreadData } from './beacon.js';

const data = workerData as BeaconThreadData;
const { spec } = data;
// The codec's frame for a value without tensors: "TB", version 1, no flags, envelope length (LE), envelope.
const packr = new Packr({ useRecords: false, moreTypes: true, mapsAsObjects: true, variableMapSize: true, structuredClone: false, copyBuffers: true });
let fields = spec.fields;

function frame(): Uint8Array {
  const message: Record<string, unknown> = { ...fields, [spec.numberField]: Atomics.add(spec.counter, 0, 1) + 1 };
  const text = [spec.signedText.prefix, ...spec.signedText.signedFields.map((field) => String(message[field]))].join('\0');
  message[spec.signatureField] = sign(null, Buffer.from(text), spec.signingKey).toString('base64url');
  const envelope = packr.pack(message);
  const out = new Uint8Array(8 + envelope.length);
  out.set([0x54, 0x42, 0x01, 0x00]);
  new DataView(out.buffer).setUint32(4, envelope.length, true);
  out.set(envelope, 8);
  return out;
}

const nc = await connect({ ...connectionOptions(data.options), name: `${data.options.name ?? 'tensorbus'} beacon` });
const timer = setInterval(() => {
  try {
    nc.publish(data.subject, frame());
  } catch {
    // Closed or reconnecting: the next beat tries again.
  }
}, spec.intervalMs);
parentPort!.on('message', (message: { update?: BeaconThreadData['spec']['fields']; stop?: true }) => {
  if (message.update) fields = message.update;
  if (message.stop) {
    clearInterval(timer);
    void nc.close().finally(() => parentPort!.postMessage('stopped'));
  }
});
parentPort!.postMessage('started');
