/**
 * The process's beacon: one worker thread for every NATS transport of the
 * process, started with the first slot and ended with the last. A slot is one
 * message published every interval (a worker's heartbeat), made on that
 * thread by a builder module and sent on a NATS connection of the thread's
 * own (one per distinct connection configuration), so it goes on while the
 * main thread computes: busy is not dead. A stopped or killed process stops
 * its beacon too. See docs/rpc.md (failure detection).
 * @module
 */
import { Worker } from 'node:worker_threads';
import type { BeaconSlot, BeaconSpec } from '@tensorbus/core';
import type { AddSlot, BeaconCommand, BeaconConnectionOptions } from './beacon-protocol.js';

/** What the beacon is doing (for tests and diagnostics). */
export interface BeaconStats {
  /** True while its thread exists. */
  running: boolean;
  /** Slots publishing now. */
  slots: number;
  /** NATS connections they use (one per distinct connection configuration). */
  connections: number;
  /** Threads started so far by this process. */
  threadsStarted: number;
}

class BeaconHost {
  private worker: Worker | undefined;
  /** Live slots, and the key of the connection each uses. */
  private readonly slots = new Map<number, string>();
  private nextId = 0;
  private threadsStarted = 0;

  /** Publishes `spec`'s messages on `subject` over a connection made from `connection`; undefined when no thread can run here. */
  add(connection: BeaconConnectionOptions, subject: string, spec: BeaconSpec): BeaconSlot | undefined {
    const command: AddSlot = {
      kind: 'add',
      id: ++this.nextId,
      connectionKey: JSON.stringify(connection),
      connection,
      subject,
      intervalMs: spec.intervalMs,
      builder: spec.builder,
      data: spec.data,
      shared: spec.shared,
    };
    const worker = this.worker ?? this.start();
    if (!worker || !this.send(worker, command)) {
      if (this.slots.size === 0) this.end();
      return undefined;
    }
    this.slots.set(command.id, command.connectionKey);
    return { remove: () => this.remove(command.id) };
  }

  get stats(): BeaconStats {
    return { running: this.worker !== undefined, slots: this.slots.size, connections: new Set(this.slots.values()).size, threadsStarted: this.threadsStarted };
  }

  private remove(id: number): void {
    if (!this.slots.delete(id)) return;
    if (this.worker) this.send(this.worker, { kind: 'remove', id });
    if (this.slots.size === 0) this.end();
  }

  /** False when the command cannot cross to the thread (options holding functions, say). */
  private send(worker: Worker, command: BeaconCommand): boolean {
    try {
      worker.postMessage(command);
      return true;
    } catch {
      return false;
    }
  }

  private start(): Worker | undefined {
    let worker: Worker;
    try {
      worker = new Worker(new URL('./beacon-thread.js', import.meta.url), {
        // The process's flags (--expose-gc, --inspect, loaders) are not the thread's business, and some break it.
        execArgv: [],
      });
    } catch {
      return undefined;
    }
    // The beacon never keeps its process alive.
    worker.unref();
    // A thread that fails only stops beating: the main thread's own heartbeats go on, and new slots start a new thread.
    worker.on('error', () => undefined);
    worker.on('exit', () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.slots.clear();
    });
    this.worker = worker;
    this.threadsStarted++;
    return worker;
  }

  private end(): void {
    const worker = this.worker;
    this.worker = undefined;
    this.slots.clear();
    void worker?.terminate().catch(() => undefined);
  }
}

/** The one beacon of this process. */
export const beaconHost = new BeaconHost();

/** What the process's beacon is doing. */
export function beaconStats(): BeaconStats {
  return beaconHost.stats;
}
