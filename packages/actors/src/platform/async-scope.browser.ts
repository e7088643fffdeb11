/**
 * The browser twin of async-scope.ts. Chromium has no `AsyncLocalStorage`
 * (nor `AsyncContext`), so a store here is a global slot: `run(store, fn)`
 * sets it for `fn` and, when `fn` returns a promise, until that promise
 * settles. That is exact while one scope is open at a time, which is why a
 * tab serves its incoming calls one at a time ({@link exclusiveServing}): the
 * call being served owns the slots across its `await`s. Code the page runs
 * meanwhile on its own (a timer, a call it started outside a served call)
 * sees the served call's scope. See docs/browser.md.
 * @module
 */

const storages = new Set<AsyncSlot<unknown>>();

/** A global slot with the `run`, `exit` and `getStore` of async-scope.ts's `AsyncSlot`. */
export class AsyncSlot<T> {
  private store: T | undefined;

  constructor() {
    storages.add(this as AsyncSlot<unknown>);
  }

  /** The store of the scope open now. */
  getStore(): T | undefined {
    return this.store;
  }

  /**
   * Runs `fn` with `store` set, until it returns or, for a promise, until the
   * promise settles. With no store it is {@link exit}: leaving a scope only
   * for the synchronous part, so that work arriving while a call is served
   * (its messages are delivered then) does not empty the served call's slot
   * across that call's awaits.
   */
  run<R>(store: T | undefined, fn: () => R): R {
    if (store === undefined) return this.exit(fn);
    const previous = this.store;
    this.store = store;
    let result: R;
    try {
      result = fn();
    } catch (error) {
      this.store = previous;
      throw error;
    }
    if (!(result instanceof Promise)) {
      this.store = previous;
      return result;
    }
    const restore = () => {
      // A scope opened later and still open keeps its slot.
      if (this.store === store) this.store = previous;
    };
    return result.then(
      (value) => (restore(), value),
      (error: unknown) => {
        restore();
        throw error;
      },
    ) as R;
  }

  /** Runs the synchronous part of `fn` with no store set (what `fn` starts must capture its scope then). */
  exit<R>(fn: () => R): R {
    const previous = this.store;
    this.store = undefined;
    try {
      return fn();
    } finally {
      this.store = previous;
    }
  }
}

/** Runs `fn(arg)` later in the async scope of where it was captured. */
export type CapturedScope = <A, R>(fn: (arg: A) => R, arg: A) => R;

/** The current stores of every slot, to run code in later with them set again (synchronously). */
export function captureScope(_name: string): CapturedScope {
  const saved = [...storages].map((storage) => [storage, storage.getStore()] as const);
  return <A, R>(fn: (arg: A) => R, arg: A): R => {
    const previous = saved.map(([storage]) => storage.getStore());
    for (const [storage, store] of saved) (storage as unknown as { store: unknown }).store = store;
    try {
      return fn(arg);
    } finally {
      saved.forEach(([storage], i) => ((storage as unknown as { store: unknown }).store = previous[i]));
    }
  };
}

/** Hooks on promises' creation and settling; each returns its remover. */
export interface PromiseHooks {
  onInit(hook: (promise: Promise<unknown>) => void): () => void;
  onSettled(hook: (promise: Promise<unknown>) => void): () => void;
}

/** No promise hooks in a page: a stream item counts as finished when its delivery returns. */
export const promiseHooks: PromiseHooks | undefined = undefined;

/** The gate through which a worker serves its incoming calls one at a time, numbering them. */
export interface ExclusiveServing {
  /** Runs `run` once the calls that arrived before it have ended. */
  serve<T>(run: () => Promise<T>): Promise<T>;
  /** The turn (a number counting the calls served) of the call being served now; undefined when none is. */
  serving(): number | undefined;
}

let queue: Promise<unknown> = Promise.resolve();
let turns = 0;
let current: number | undefined;

/**
 * A tab's incoming calls run one at a time, in the order they arrive, so each
 * owns the global scopes while it runs; each is a numbered turn, which the
 * calls it makes carry (agent/reentrancy.ts).
 */
export const exclusiveServing: ExclusiveServing | undefined = {
  serve<T>(run: () => Promise<T>): Promise<T> {
    const turn = queue.then(async () => {
      current = ++turns;
      try {
        return await run();
      } finally {
        current = undefined;
      }
    });
    queue = turn.catch(() => undefined);
    return turn;
  },
  serving: () => current,
};
