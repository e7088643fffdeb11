/**
 * What the main thread tells the beacon thread (see beacon-host.ts): add a
 * slot, remove one. Kept apart so both sides share one definition.
 * @module
 */
import type { NatsTransportOptions } from '../options.js';

/**
 * The options a beacon connection is made from: the transport's, less what
 * only the main connection uses (namespace, data plane, connection name).
 * Two transports with equal ones share one beacon connection.
 */
export type BeaconConnectionOptions = Omit<NatsTransportOptions, 'namespace' | 'direct' | 'name' | 'chunkTimeoutMs' | 'maxTransferBytes' | 'beacon'>;

/** Starts publishing a slot's messages. */
export interface AddSlot {
  kind: 'add';
  id: number;
  /** Which connection: slots with equal keys share one. */
  connectionKey: string;
  connection: BeaconConnectionOptions;
  /** Full subject (namespace included). */
  subject: string;
  intervalMs: number;
  builder: string;
  data: unknown;
  shared: Int32Array;
}

/** Stops a slot; its connection closes with its last slot. */
export interface RemoveSlot {
  kind: 'remove';
  id: number;
}

export type BeaconCommand = AddSlot | RemoveSlot;

/** The thread's answer to an AddSlot: whether the slot's messages go out. */
export interface SlotReady {
  kind: 'ready';
  id: number;
  ok: boolean;
}

/** What a beat builder module exports. */
export type BeatBuilder = (data: unknown, shared: Int32Array) => Uint8Array | undefined;
