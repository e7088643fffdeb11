/**
 * A beacon: a message published every interval from a worker thread with a
 * NATS connection of its own, so a worker's heartbeats go on while its main
 * thread computes (a WASM forward pass, a data-loading step): busy is not
 * dead. A process that is stopped or killed stops its beacon too, so failure
 * detection still sees it. See docs/rpc.md.
 * @module
 */
import { Worker } from 'node:worker_threads';
import type { Beacon, BeaconSpec } from '@tensorbus/core';
import type { NatsTransportOptions } from '../options.js';

/** What the beacon thread is given. */
export interface BeaconThreadData {
  options: NatsTransportOptions;
  /** Full subject, namespace included. */
  subject: string;
  spec: BeaconSpec;
}

/**
 * Starts a beacon for `spec` on `subject`, connecting with `options`;
 * undefined when it cannot be started here (options that cannot cross to a
 * thread, such as functions in `connectionOptions`): the caller publishes
 * itself then.
 */
export function startBeacon(options: NatsTransportOptions, subject: string, spec: BeaconSpec): Beacon | undefined {
  const { connectionOptions: _passThrough, direct: _direct, ...plain } = options;
  if (_passThrough !== undefined && Object.values(_passThrough).some((value) => typeof value === 'function')) return undefined;
  let worker: Worker;
  try {
    worker = new Worker(new URL('./beacon-thread.js', import.meta.url), {
      // Flags of the main process (--expose-gc, --inspect, ...) are not the thread's business, and some refuse to run in one.
      execArgv: [],
      workerData: { options: { ...plain, ...(_passThrough ? { connectionOptions: _passThrough } : {}) }, subject, spec } satisfies BeaconThreadData,
    });
  } catch {
    return undefined;
  }
  // A beacon never keeps its process alive, and a failed one only stops beating (others then see silence).
  worker.unref();
  let live = false;
  worker.on('message', (message) => {
    if (message === 'started') live = true;
  });
  worker.on('error', () => (live = false));
  worker.on('exit', () => (live = false));
  let stopped: Promise<void> | undefined;
  return {
    running: () => live,
    update: (fields) => worker.postMessage({ update: fields }),
    stop: () =>
      (stopped ??= new Promise<void>((resolve) => {
        const done = () => resolve();
        worker.once('exit', done);
        worker.on('message', (message) => message === 'stopped' && void worker.terminate().then(done, done));
        worker.postMessage({ stop: true });
        // A thread still connecting is ended outright.
        setTimeout(() => void worker.terminate().then(done, done), 1_000).unref();
      })),
  };
}
