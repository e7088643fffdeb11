/**
 * What the page server hands a tab: a client slot of the federation, with
 * the credentials of that slot's own NATS account and nothing else. The
 * pool is fixed when the run starts, and each slot is handed out once: a
 * tab is untrusted, so opening more tabs (or asking again) never makes
 * accounts, tickets or data slices beyond the ones the run was started with.
 * @module
 */

/** How a tab's client trains (the run's settings, as JSON). */
export interface TabSettings {
  localEpochs: number;
  batchSize: number;
  learningRate: number;
  seed: number;
  skew: number;
  /** Rounds this client sits out (`--skip tab1:3`). */
  skip: number[];
}

/** One client slot, as the page receives it from `POST /slot`. */
export interface Slot {
  /** The client's worker name, its NATS user and (upper case) its account. */
  client: string;
  /** Its password: valid for its own account only. */
  pass: string;
  /** The ticket it names itself with to the server (protocol.ts). */
  ticket: string;
  /** The nats-server's WebSocket address. */
  servers: string;
  namespace: string;
  /** Its slice of the data split: `index` of `clients`. */
  index: number;
  clients: number;
  settings: TabSettings;
}

/** A fixed pool of slots, each handed out once. */
export class SlotPool {
  private readonly free: Slot[];
  private readonly taken: string[] = [];

  constructor(slots: readonly Slot[]) {
    this.free = [...slots];
  }

  /** The next free slot, or undefined when every slot was handed out. */
  take(): Slot | undefined {
    const slot = this.free.shift();
    if (slot) this.taken.push(slot.client);
    return slot;
  }

  /** Clients whose slots were handed out, in order. */
  handedOut(): readonly string[] {
    return this.taken;
  }

  /** How many slots are still free. */
  get left(): number {
    return this.free.length;
  }
}
