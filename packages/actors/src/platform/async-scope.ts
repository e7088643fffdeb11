/**
 * Context that follows a call across `await`s, on Node's
 * `node:async_hooks`: {@link AsyncSlot}s, a scope captured to run code in
 * later, and the promise hooks the stream consumers count work with. A
 * page's bundle takes async-scope.browser.ts instead (the package's
 * "browser" field), where a tab serves its incoming calls one at a time.
 * See docs/browser.md.
 *
 * Every slot lives in one `AsyncLocalStorage`, whose store is a frame: an
 * array holding each slot's value at its index, copied when a slot is set.
 * Node 20 hands every promise made to each enabled `AsyncLocalStorage` in
 * turn, adding a property per storage: with one storage for the served
 * call, its tensors, its span and its autograd context, a promise pays for
 * one. Leaving a slot (`exit`) sets it to undefined in a new frame instead
 * of switching a storage off and on again (which Node does by unhooking
 * promises while the last storage is off).
 * @module
 */
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { promiseHooks as v8PromiseHooks } from 'node:v8';

/** The one storage of every slot: its store holds slot `i`'s value at index `i`. */
const frames = new AsyncLocalStorage<readonly unknown[]>();
const EMPTY_FRAME: readonly unknown[] = [];
let slotsMade = 0;

/**
 * A value that follows the code that set it across `await`s, timers and
 * callbacks, as an `AsyncLocalStorage` store does (the same `run`, `exit`
 * and `getStore`).
 */
export class AsyncSlot<T> {
  private readonly index = slotsMade++;

  /** The value set by the innermost `run` around the running code; undefined outside any. */
  getStore(): T | undefined {
    return frames.getStore()?.[this.index] as T | undefined;
  }

  /** Runs `fn` with the slot set to `store`, for `fn` and everything it starts; the other slots keep their values. */
  run<R>(store: T | undefined, fn: () => R): R {
    const frame = frames.getStore() ?? EMPTY_FRAME;
    if (frame[this.index] === store) return fn();
    const next = frame.slice();
    next[this.index] = store;
    return frames.run(next, fn);
  }

  /** Runs `fn` with the slot empty, for `fn` and everything it starts. */
  exit<R>(fn: () => R): R {
    return this.run(undefined, fn);
  }
}

/** Runs `fn(arg)` later in the async scope of where it was captured. */
export type CapturedScope = <A, R>(fn: (arg: A) => R, arg: A) => R;

/** The current async scope (every slot's value), to run code in later. */
export function captureScope(name: string): CapturedScope {
  const resource = new AsyncResource(name);
  return (fn, arg) => resource.runInAsyncScope(fn, undefined, arg);
}

/** Hooks on promises' creation and settling; each returns its remover. */
export interface PromiseHooks {
  onInit(hook: (promise: Promise<unknown>) => void): () => void;
  onSettled(hook: (promise: Promise<unknown>) => void): () => void;
}

/** Hooks on every promise's creation and settling; undefined where the platform has none. */
export const promiseHooks: PromiseHooks | undefined = v8PromiseHooks as unknown as PromiseHooks;

/** The gate through which a worker serves its incoming calls one at a time, numbering them. */
export interface ExclusiveServing {
  /** Runs `run` once the calls that arrived before it have ended. */
  serve<T>(run: () => Promise<T>): Promise<T>;
  /** The turn (a number counting the calls served) of the call being served now; undefined when none is. */
  serving(): number | undefined;
}

/**
 * Where a worker must serve its incoming calls one at a time (a tab, whose
 * scopes are global), the gate they pass; undefined in Node, where calls run
 * concurrently, each in its own async scope.
 */
export const exclusiveServing: ExclusiveServing | undefined = undefined;
