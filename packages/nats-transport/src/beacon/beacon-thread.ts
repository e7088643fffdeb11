/**
 * The beacon thread (see beacon-host.ts): one NATS connection per distinct
 * connection configuration, and per slot a timer that asks the slot's
 * builder for a message and publishes it. It loads neither TensorFlow.js
 * nor the codec: it runs while the main thread computes, and costs little
 * when it does not.
 * @module
 */
import { parentPort } from 'node:worker_threads';
import { connect, type NatsConnection } from 'nats';
import { connectionOptions } from '../options.js';
import type { AddSlot, BeaconCommand, BeatBuilder, SlotReady } from './beacon-protocol.js';

interface Connection {
  nc: Promise<NatsConnection | undefined>;
  slots: number;
  /** False from a disconnect until the reconnect: beats made then would only queue, so none are made. */
  up: boolean;
}

interface Slot {
  connectionKey: string;
  timer?: NodeJS.Timeout;
  removed: boolean;
}

const connections = new Map<string, Connection>();
const slots = new Map<number, Slot>();
const builders = new Map<string, Promise<BeatBuilder | undefined>>();

function builderOf(url: string): Promise<BeatBuilder | undefined> {
  let builder = builders.get(url);
  if (!builder) {
    builder = import(url).then(
      (module: { beat?: unknown }) => (typeof module.beat === 'function' ? (module.beat as BeatBuilder) : undefined),
      () => undefined,
    );
    builders.set(url, builder);
  }
  return builder;
}

function connectionFor(command: AddSlot): Connection {
  let connection = connections.get(command.connectionKey);
  if (!connection) {
    // A connection that cannot be made leaves its slots silent: the main thread's own beats go on.
    const nc = connect({ ...connectionOptions(command.connection), name: 'tensorbus beacon' }).catch(() => undefined);
    const made: Connection = { nc, slots: 0, up: true };
    void nc.then((c) => c && followStatus(c, made));
    connection = made;
    connections.set(command.connectionKey, connection);
  }
  connection.slots++;
  return connection;
}

/** Keeps `connection.up` as the connection is: a slot beats only while its beats leave the thread. */
async function followStatus(nc: NatsConnection, connection: Connection): Promise<void> {
  try {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') connection.up = false;
      else if (status.type === 'reconnect') connection.up = true;
    }
  } catch {
    // Closed: its slots go with it.
  }
}

async function add(command: AddSlot): Promise<void> {
  const slot: Slot = { connectionKey: command.connectionKey, removed: false };
  slots.set(command.id, slot);
  const connection = connectionFor(command);
  const [nc, beat] = await Promise.all([connection.nc, builderOf(command.builder)]);
  if (slot.removed) return;
  const ready = (ok: boolean) => parentPort!.postMessage({ kind: 'ready', id: command.id, ok } satisfies SlotReady);
  if (!nc || !beat) return ready(false);
  slot.timer = setInterval(() => {
    if (!connection.up || nc.isClosed()) return;
    try {
      const message = beat(command.data, command.shared);
      if (message) nc.publish(command.subject, message);
    } catch {
      // Reconnecting or closed: the next beat tries again.
    }
  }, command.intervalMs);
  ready(true);
}

function remove(id: number): void {
  const slot = slots.get(id);
  if (!slot) return;
  slots.delete(id);
  slot.removed = true;
  if (slot.timer) clearInterval(slot.timer);
  const connection = connections.get(slot.connectionKey);
  if (connection && --connection.slots === 0) {
    connections.delete(slot.connectionKey);
    void connection.nc.then((nc) => nc?.close()).catch(() => undefined);
  }
}

parentPort!.on('message', (command: BeaconCommand) => {
  if (command.kind === 'add') void add(command);
  else if (command.kind === 'remove') remove(command.id);
});
