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
import type { AddSlot, BeaconCommand, BeaconConnectionOptions, SlotReady } from './beacon-protocol.js';

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

/** Shortest interval between a slot's messages, ms. */
const MIN_INTERVAL_MS = 10;

class BeaconHost {
  private worker: Worker | undefined;
  /** Live slots: the key of the connection each uses, and what settles its `ready`. */
  private readonly slots = new Map<number, { key: string; ready(ok: boolean): void }>();
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
      // A timer faster than this would only burn the thread.
      intervalMs: Math.max(MIN_INTERVAL_MS, spec.intervalMs),
      builder: spec.builder,
      data: spec.data,
      shared: spec.shared,
    };
    const worker = this.worker ?? this.start();
    if (!worker || !this.send(worker, command)) {
      if (this.slots.size === 0) this.end();
      return undefined;
    }
    let settle!: (ok: boolean) => void;
    const ready = new Promise<boolean>((resolve) => (settle = resolve));
    this.slots.set(command.id, { key: command.connectionKey, ready: settle });
    return { ready, remove: () => this.remove(command.id) };
  }

  get stats(): BeaconStats {
    return { running: this.worker !== undefined, slots: this.slots.size, connections: new Set([...this.slots.values()].map((slot) => slot.key)).size, threadsStarted: this.threadsStarted };
  }

  private remove(id: number): void {
    const slot = this.slots.get(id);
    if (!slot) return;
    this.slots.delete(id);
    slot.ready(false);
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
    // A thread that fails only stops beating: the main thread's own heartbeats go on, and new slots start a new thread.
    worker.on('error', () => undefined);
    worker.on('message', (message: SlotReady) => {
      if (this.worker === worker && message?.kind === 'ready') this.slots.get(message.id)?.ready(message.ok === true);
    });
    worker.on('exit', () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.dropSlots();
    });
    // The beacon never keeps its process alive. After the listeners: one for 'message' refs the thread's port again.
    worker.unref();
    this.worker = worker;
    this.threadsStarted++;
    return worker;
  }

  /** Forgets every slot (their thread is gone): those not ready yet never will be. */
  private dropSlots(): void {
    for (const slot of this.slots.values()) slot.ready(false);
    this.slots.clear();
  }

  private end(): void {
    const worker = this.worker;
    this.worker = undefined;
    this.dropSlots();
    void worker?.terminate().catch(() => undefined);
  }
}

/** The one beacon of this process. */
export const beaconHost = new BeaconHost();

/** What the process's beacon is doing. */
export function beaconStats(): BeaconStats {
  return beaconHost.stats;
}
