/**
 * Knows when a stream subscriber has finished with an item, also when it
 * finishes later than its `next` returns: rxjs operators such as
 * `concatMap(async …)` or `mergeMap(f, n)` queue items on their own side and
 * run asynchronous work for them, and tell the source nothing.
 *
 * Each item is delivered inside an async context of its own; the promises
 * made in that context (the work's own, and those of the work started from
 * its continuations, which is where `concatMap` starts the next queued item)
 * are counted through V8's promise hooks until they settle. An item is
 * finished when its `next` returned and its context has no unsettled promise;
 * credit goes back for items in delivery order, so an item queued behind
 * unfinished work is not credited before that work (and the queue it drains)
 * ends. A subscriber that does its work synchronously makes no promise, and
 * its credit returns when `next` returns, as before.
 *
 * The hooks are installed only while a subscribed stream is open. A consumer
 * that leaves a promise unsettled for good inside an item's work (a promise
 * it never resolves) holds that item's credit, and so the producer, like a
 * consumer that never finishes: use `for await` or `concatMapStream` there.
 * @module
 */
import { AsyncSlot, promiseHooks } from '../platform/async-scope.js';
import { nextTurn } from '../platform/process.js';

/** The work for one delivered item. */
interface ItemWork {
  /** Promises made for it that have not settled. */
  pending: number;
  /** Its `next` returned. */
  delivered: boolean;
  /** Called when `pending` drops to zero. */
  idle: () => void;
}

const currentItem = new AsyncSlot<ItemWork>();
const madeFor = new WeakMap<Promise<unknown>, ItemWork>();
let openTrackers = 0;
let removeHooks: (() => void) | undefined;

function installHooks(): void {
  // No promise hooks (a page): nothing counts an item's promises, so an item is finished once its delivery returns.
  if (openTrackers++ > 0 || promiseHooks === undefined) return;
  const stopInit = promiseHooks.onInit((promise) => {
    const work = currentItem.getStore();
    if (work === undefined) return;
    work.pending++;
    madeFor.set(promise, work);
  });
  const stopSettled = promiseHooks.onSettled((promise) => {
    const work = madeFor.get(promise);
    if (work === undefined) return;
    madeFor.delete(promise);
    if (--work.pending === 0) work.idle();
  });
  removeHooks = () => {
    stopInit();
    stopSettled();
  };
}

function uninstallHooks(): void {
  if (--openTrackers > 0) return;
  removeHooks?.();
  removeHooks = undefined;
}

/** Credits a subscriber's items as it finishes with them (see the module's text). */
export class ConsumerWork {
  /** Delivered items not credited yet, oldest first. */
  private readonly unfinished: ItemWork[] = [];
  private flushScheduled = false;
  private closed = false;

  /** `credit(n)`: the subscriber has finished with `n` more items. */
  constructor(private readonly credit: (n: number) => void) {
    installHooks();
  }

  /** Runs `next` (the delivery of one item) in that item's own context. */
  deliver(next: () => void): void {
    const work: ItemWork = { pending: 0, delivered: false, idle: () => this.scheduleFlush() };
    this.unfinished.push(work);
    try {
      currentItem.run(work, next);
    } finally {
      work.delivered = true;
      this.flush();
    }
  }

  /** Stops counting: the subscription ended. Idempotent. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.unfinished.length = 0;
    uninstallHooks();
  }

  /** Called from a promise hook: credit later, outside any item's context, making no promise there. */
  private scheduleFlush(): void {
    if (this.flushScheduled || this.closed) return;
    this.flushScheduled = true;
    currentItem.exit(() =>
      nextTurn(() => {
        this.flushScheduled = false;
        this.flush();
      }),
    );
  }

  private flush(): void {
    if (this.closed) return;
    let finished = 0;
    while (this.unfinished.length > 0 && this.unfinished[0]!.delivered && this.unfinished[0]!.pending === 0) {
      this.unfinished.shift();
      finished++;
    }
    if (finished > 0) currentItem.exit(() => this.credit(finished));
  }
}
