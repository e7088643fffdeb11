/**
 * Context that follows a call across `await`s, on Node's
 * `node:async_hooks`: `AsyncLocalStorage`, a scope captured to run code in
 * later, and the promise hooks the stream consumers count work with. A
 * page's bundle takes async-scope.browser.ts instead (the package's
 * "browser" field), where a tab serves its incoming calls one at a time.
 * See docs/browser.md.
 * @module
 */
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { promiseHooks as v8PromiseHooks } from 'node:v8';

export { AsyncLocalStorage };

/** Runs `fn(arg)` later in the async scope of where it was captured. */
export type CapturedScope = <A, R>(fn: (arg: A) => R, arg: A) => R;

/** The current async scope (every AsyncLocalStorage's store), to run code in later. */
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
