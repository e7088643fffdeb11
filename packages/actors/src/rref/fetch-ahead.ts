/**
 * `toHere()` of a value this worker's `remote()` is still creating, without
 * waiting for the creation's acknowledgement first (docs/rref.md, "toHere()
 * while the creation is on its way"): either the creation brings the value
 * back, or the fetch goes right behind it.
 * @module
 */
import { RRefError, WorkerUnavailableError } from '@tensorbus/core';
import type { CallOptions } from '../agent/host.js';
import type { Budget } from './bounded-wait.js';
import { disposeTransient } from '../tensors.js';
import { ownerLost, type CreationLaunch, type UserState } from './rref.js';

/** What the fetches need of their RRef manager. */
export interface FetchAheadHost {
  /** The budget of an operation with `options`. */
  budget(options: CallOptions): Budget;
  /** Runs `call` on the owner, turning the owner's disappearance into RREF_OWNER_LOST. */
  toOwner(user: UserState, rest: CallOptions, call: (rest: CallOptions) => Promise<unknown>): Promise<unknown>;
}

/**
 * A fetch made before the creation call of `remote()` went out: the creation
 * brings the value back with its reply (one exchange, no fetch). Within the
 * fetch's own timeout; a value that comes after it is disposed.
 */
export async function fetchWithCreation(host: FetchAheadHost, user: UserState, launch: CreationLaunch, options: CallOptions): Promise<unknown> {
  launch.wantsValue = true;
  try {
    return await host.budget(options).wait(launch.result, () => `the creation of RRef ${user.rrefId}`);
  } catch (error) {
    launch.abandoned = true;
    // The confirmation's handlers ran first (registered first): a failed creation says so.
    throw user.failure ?? error;
  }
}

/**
 * A fetch of a value whose creation call is on its way [PyTorch: a fetch
 * that reaches the owner before the creation waits for it]: sent at once,
 * right behind the creation, so `remote()` + `toHere()` cost one round trip
 * instead of two. The owner answers it once the value is made.
 *
 * The value counts only once the creation is acknowledged (its reply comes
 * first, on the same route): a creation that failed or timed out fails the
 * fetch with RREF_CREATION_FAILED and the value is let go. A fetch that
 * overtook its creation (the two went different ways, or the creation waits
 * for RRefs among its arguments) finds no value and changes nothing: it is
 * sent again once the creation is acknowledged.
 */
export async function fetchBehindCreation(host: FetchAheadHost, user: UserState, options: CallOptions, call: (rest: CallOptions) => Promise<unknown>): Promise<unknown> {
  const budget = host.budget(options);
  let result: unknown;
  try {
    result = await call(options);
  } catch (error) {
    await budget.wait(user.confirmation, () => `the creation of RRef ${user.rrefId}`);
    if (user.failure) throw user.failure;
    const overtaken = error instanceof RRefError && error.code === 'RREF_OWNER_LOST' && user.confirmed;
    if (!overtaken) throw error instanceof WorkerUnavailableError ? (user.failure = ownerLost(user, error)) : error;
    return host.toOwner(user, budget.rest(options), call);
  }
  try {
    await budget.wait(user.confirmation, () => `the creation of RRef ${user.rrefId}`);
    if (user.failure) throw user.failure;
  } catch (error) {
    disposeTransient(result);
    throw error;
  }
  return result;
}
