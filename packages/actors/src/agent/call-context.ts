/**
 * What the running code is serving: the agent, and the call it serves (with
 * its metadata), carried across awaits by AsyncLocalStorage. `currentAgent()`
 * and protocols such as distributed autograd read it.
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** The call being served, and by which agent. */
export interface CallScope<A = unknown> {
  agent: A;
  /** Name of the calling worker. */
  caller: string;
  /** Metadata that came with the call (protocol extensions put theirs here). */
  meta: CallMeta;
}

/** Metadata travelling with each call; protocols add their own keys. */
export interface CallMeta {
  /** Caller's worker name. */
  from: string;
  [key: string]: unknown;
}

/** The storage every protocol shares. */
export const callScope = new AsyncLocalStorage<CallScope>();
