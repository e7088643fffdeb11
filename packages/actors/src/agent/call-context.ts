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
  /** Name of the calling worker, as the call claims it (`meta.from`). */
  caller: string;
  /**
   * True when the call showed that it comes from `caller`, a current member
   * (its MAC checked with that member's keys). An unverified caller is served,
   * but must never be treated as that member: not counted for shutdown, never
   * a reason to change membership, and state it makes is not that member's.
   */
  verified: boolean;
  /** Metadata that came with the call (protocol extensions put theirs here). */
  meta: CallMeta;
}

/** Who sent a call: the name it claims and whether it showed it (see {@link CallScope.verified}). */
export interface CallerIdentity {
  name: string;
  verified: boolean;
}

/** Metadata travelling with each call; protocols add their own keys. */
export interface CallMeta {
  /** Caller's worker name (a claim: see {@link CallScope.verified}). */
  from: string;
  /** The call's MAC, `[counter, mac]`, added by the agent as it sends (see call-auth.ts). */
  auth?: unknown;
  [key: string]: unknown;
}

/** The storage every protocol shares. */
export const callScope = new AsyncLocalStorage<CallScope>();
