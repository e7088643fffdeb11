/**
 * The uses of an RRef that run on its owner: fetching its value, calling its
 * methods, a backward pass from it. Each waits for the RRef to be usable (its
 * creation or fork confirmed) and runs within one timeout, is retried after
 * a supervised object's re-creation when asked to (supervised.ts), and turns
 * the owner's disappearance into RREF_OWNER_LOST. See docs/rref.md.
 * @module
 */
import { InvalidArgumentError, WorkerUnavailableError } from '@tensorbus/core';
import type { AgentHost, CallOptions } from '../agent/host.js';
import { isIdempotent } from '../registry/functions.js';
import { Budget } from './bounded-wait.js';
import { fetchBehindCreation, fetchWithCreation, type FetchAheadHost } from './fetch-ahead.js';
import { rrefBackward } from './rref-backward.js';
import { CALL_FN, FETCH_FN } from './rref-protocol.js';
import { creationFailed, ownerLost, type RRef, type UserState } from './rref.js';
import { backAfter, retriesOf, withRetries } from './supervised.js';

/** Runs the uses of one worker's RRefs on their owners. */
export class OwnerCalls implements FetchAheadHost {
  /** Calls made through `host`. */
  constructor(private readonly host: AgentHost) {}

  /** The budget of an operation with `options` (the agent's default timeout when none is given). */
  budget(options: CallOptions): Budget {
    return Budget.of(options, this.host.options.rpcTimeoutMs);
  }

  /** Resolves once an owner handle's value exists, within the options' timeout; rejects with its creation failure. */
  async waitReady(rref: RRef<unknown>, options: CallOptions): Promise<void> {
    const entry = rref.entry!;
    if (!entry.created) await this.budget(options).wait(entry.ready, () => `the creation of RRef ${rref.rrefId}`);
    if (entry.failure !== undefined) throw creationFailed(rref.rrefId, entry.failure);
  }

  /** A copy of `rref`'s value [to_here()]. */
  async fetch(rref: RRef<unknown>, options: CallOptions): Promise<unknown> {
    const fetch = (rest: CallOptions) => this.onOwner(rref, rest, (last) => this.host.call(rref.ownerName(), FETCH_FN, [rref.rrefId], last), true);
    // A fetch changes nothing: it may always be retried.
    return this.retrying(rref, options, () => true, 'toHere()', fetch);
  }

  /** Runs `method` of `rref`'s value on its owner [rpc_sync().m()]. */
  async callMethod(rref: RRef<unknown>, method: string, args: unknown[], options: CallOptions): Promise<unknown> {
    const call = (rest: CallOptions) => this.onOwner(rref, rest, (last) => this.host.call(rref.ownerName(), CALL_FN, [rref.rrefId, method, args], last));
    const fn = rref.user?.supervision?.spec.fn ?? '';
    return this.retrying(rref, options, () => isIdempotent(fn, method), `method '${method}' of class '${fn}'`, call);
  }

  /** Runs `use` of `rref`, again after its re-creation when asked to (`retries`) and `idempotent` (supervised.ts). */
  private retrying(rref: RRef<unknown>, options: CallOptions, idempotent: () => boolean, what: string, use: (rest: CallOptions) => Promise<unknown>): Promise<unknown> {
    if (retriesOf(options) === 0) return use(options);
    const user = rref.user;
    if (user?.supervision === undefined) {
      throw new InvalidArgumentError(`retries apply to the supervised RRefs this worker made (remote(to, Class, args, { maxRestarts })); RRef ${rref.rrefId} is not one`);
    }
    const { retries: _, ...once } = options;
    let generation = 0;
    return withRetries(options, this.budget(options), idempotent, what, (rest) => {
      generation = user.supervision!.generation;
      return use({ ...once, timeoutMs: rest.timeoutMs });
    }, () => backAfter(user, generation));
  }

  /** A backward pass from `rref`'s value on its owner [RRef.backward]. */
  backward(rref: RRef<unknown>, contextId: string | undefined, retainGraph: boolean): Promise<void> {
    return rrefBackward(this.host, rref, contextId, retainGraph, (call) => this.onOwner(rref, {}, call));
  }

  /**
   * Runs a call to the owner once the RRef is usable, the wait and the call
   * within one timeout, turning the owner's disappearance into RREF_OWNER_LOST.
   */
  private async onOwner(rref: RRef<unknown>, options: CallOptions, call: (rest: CallOptions) => Promise<unknown>, readOnly = false): Promise<unknown> {
    this.host.checkRunning();
    rref.checkUsable();
    const user = rref.user;
    if (readOnly && user?.launch && !user.launch.wantsValue) return fetchWithCreation(this, user, user.launch, options);
    if (readOnly && user && !user.confirmed && user.creating) return fetchBehindCreation(this, user, options, call);
    let rest = options;
    // Nothing is sent before the RRef is usable: a use that timed out while waiting must not run later.
    if (user && !user.confirmed) {
      const budget = this.budget(options);
      await budget.wait(user.confirmation, () => `the creation or confirmation of RRef ${rref.rrefId}`);
      rref.checkUsable();
      rest = budget.rest(options);
    } else if (rref.entry && !rref.entry.created) {
      const budget = this.budget(options);
      await this.waitReady(rref, options);
      rref.checkUsable();
      rest = budget.rest(options);
    }
    return this.toOwner(user, rest, call);
  }

  /** Runs `call` on the owner, turning the owner's disappearance into RREF_OWNER_LOST. */
  async toOwner(user: UserState | undefined, rest: CallOptions, call: (rest: CallOptions) => Promise<unknown>): Promise<unknown> {
    try {
      return await call(rest);
    } catch (error) {
      // A supervised object's owner may come back: only this call fails (with its error), not the RRef.
      if (error instanceof WorkerUnavailableError && user && !user.supervision) {
        user.failure = ownerLost(user, error);
        throw user.failure;
      }
      // The owner's departure failed the RRef meanwhile (user-forks.ts, as the departure is known: an owner that left, or out of restarts): the use fails with it.
      if (error instanceof WorkerUnavailableError && user?.failure) throw user.failure;
      throw error;
    }
  }
}
