/**
 * Deletes of user forks, gathered per owner: the forks released within one
 * short window go to their owner as one acknowledged `rref.delete` message
 * instead of one message (and one acknowledgement) each. A user releasing
 * RRefs one after another (a training loop's `remote` + `toHere` +
 * `release`) then costs its owner one delete message per window, not per
 * RRef. Deletes were already asynchronous (PyTorch's too); the window only
 * adds its few milliseconds to when the owner drops the value.
 * @module
 */
import { unrefTimer } from '../platform/process.js';
import { DELETE_BATCH_MAX, type ForkKey } from './rref-protocol.js';

/** How long the first delete of a batch waits for others to the same owner, ms. */
export const DELETE_WINDOW_MS = 2;

interface Batch {
  forks: ForkKey[];
  timer: NodeJS.Timeout;
  sent: Promise<void>;
  send: () => void;
}

/** The delete batches of one worker, one open batch per owner. */
export class DeleteBatches {
  private readonly open = new Map<string, Batch>();

  /** `deliver(owner, forks)` sends one batch and resolves once the owner acknowledged it. */
  constructor(private readonly deliver: (owner: string, forks: ForkKey[]) => Promise<void>) {}

  /** Adds a fork to `owner`'s open batch; resolves once that batch was acknowledged (rejects when it could not be delivered). */
  add(owner: string, fork: ForkKey): Promise<void> {
    let batch = this.open.get(owner);
    if (!batch) batch = this.start(owner);
    batch.forks.push(fork);
    const { sent } = batch;
    if (batch.forks.length >= DELETE_BATCH_MAX) batch.send();
    return sent;
  }

  private start(owner: string): Batch {
    let settle!: { resolve: () => void; reject: (error: unknown) => void };
    const sent = new Promise<void>((resolve, reject) => (settle = { resolve, reject }));
    const batch: Batch = {
      forks: [],
      sent,
      timer: setTimeout(() => batch.send(), DELETE_WINDOW_MS),
      send: () => {
        if (this.open.get(owner) !== batch) return;
        this.open.delete(owner);
        clearTimeout(batch.timer);
        this.deliver(owner, batch.forks).then(settle.resolve, settle.reject);
      },
    };
    unrefTimer(batch.timer);
    this.open.set(owner, batch);
    return batch;
  }
}
