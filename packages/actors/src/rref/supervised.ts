/**
 * Supervised remote objects, Ray's `max_restarts` in this framework's terms:
 * the creator of `agent.remote(to, Class, args, { maxRestarts })` keeps what
 * made the object, and when its owner's name comes back as a new incarnation
 * (a restarted worker, `rejoined$`), makes it there again under the same RRef
 * id and fork, at most `maxRestarts` times; past that, or when the owner left
 * for good, the RRef fails with RREF_OWNER_LOST (Ray's RayActorError). Uses
 * made while the owner is away wait for the object to be back, within their
 * timeout; a call in flight when the owner died fails with its error, once,
 * unless it asked for retries of an idempotent method. See docs/supervision.md.
 * @module
 */
import { InvalidArgumentError, RRefError, WorkerUnavailableError } from '@tensorbus/core';
import { filter, firstValueFrom, take, timeout } from 'rxjs';
import type { CallOptions, MembersView } from '../agent/host.js';
import { isRegisteredClass } from '../registry/functions.js';
import type { Budget } from './bounded-wait.js';
import type { CreateSpec, Supervision } from './rref-protocol.js';
import type { UserState } from './rref.js';

/** Options of `agent.remote()`. */
export interface RemoteOptions extends CallOptions {
  /**
   * Makes the object again on its owner's next incarnations, at most this
   * many times (a class's instance on another worker only; default 0: an
   * owner's death ends the RRef with RREF_OWNER_LOST).
   */
  maxRestarts?: number;
}

/** Restarts allowed at most per object. */
const MAX_RESTARTS_LIMIT = 1_000;
/** Retries allowed at most per call. */
const MAX_RETRIES = 100;

/** `options.maxRestarts`, checked: a whole number in [0, 1000]. */
export function maxRestartsOf(options: RemoteOptions): number {
  const n = options.maxRestarts ?? 0;
  if (!Number.isInteger(n) || n < 0 || n > MAX_RESTARTS_LIMIT) {
    throw new InvalidArgumentError(`maxRestarts must be a whole number from 0 to ${MAX_RESTARTS_LIMIT}, not ${String(n)}`);
  }
  return n;
}

/** `options.retries`, checked: a whole number in [0, 100]. */
export function retriesOf(options: CallOptions): number {
  const n = options.retries ?? 0;
  if (!Number.isInteger(n) || n < 0 || n > MAX_RETRIES) throw new InvalidArgumentError(`retries must be a whole number from 0 to ${MAX_RETRIES}, not ${String(n)}`);
  return n;
}

/** The supervision of a new object made from `spec` (a class's construction), or undefined when not asked for. */
export function supervise(spec: CreateSpec, maxRestarts: number): Supervision | undefined {
  if (maxRestarts === 0) return undefined;
  if (!('fn' in spec) || !isRegisteredClass(spec.fn)) throw new InvalidArgumentError('maxRestarts applies to remote(to, Class, args) of a remoteClass only');
  return { spec: { ...spec, supervised: true }, maxRestarts, restarts: 0, generation: 0, back: undefined, waiters: new Set() };
}

/**
 * The owner of `state` is gone (`reason`): a supervised object with restarts
 * left waits for the owner's next incarnation (its uses wait for it too);
 * otherwise the RRef is lost for good. Returns the failure to set, if any.
 */
export function ownerGone(state: UserState, reason: 'left' | 'failed'): RRefError | undefined {
  const sup = state.supervision;
  const lost = (why: string) => new RRefError('RREF_OWNER_LOST', `the owner '${state.owner}' of RRef ${state.rrefId} ${why}`, { cause: new WorkerUnavailableError(`worker '${state.owner}' is gone`) });
  if (sup === undefined) return lost('is gone');
  if (reason === 'left') return lost('left the group (a supervised object is made again only on a restarted worker)');
  if (sup.restarts >= sup.maxRestarts) return lost(`failed again after ${sup.restarts} restart${sup.restarts === 1 ? '' : 's'} (maxRestarts ${sup.maxRestarts})`);
  sup.restarts++;
  sup.generation++;
  if (sup.back === undefined) {
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    sup.back = { promise, resolve };
    state.confirmed = false;
    state.confirmation = promise;
    // Its first creation is long done: a fetch waits for the re-creation instead of running ahead of it (fetch-ahead.ts).
    state.creating = false;
  }
  return undefined;
}

/**
 * Makes the object of `state` again on its owner's new incarnation with
 * `create` (the creation call, restart number included); its uses resume
 * once it is there, or fail with RREF_OWNER_LOST when that failed. Resolves
 * true when it made the object after the RRef was released meanwhile (the
 * caller then tells the owner to drop it).
 */
export async function recreate(state: UserState, create: (spec: CreateSpec) => Promise<unknown>): Promise<boolean> {
  const sup = state.supervision;
  if (sup?.back === undefined || state.failure || state.released) return false;
  const back = sup.back;
  const generation = sup.generation;
  try {
    await create({ ...sup.spec, restart: sup.restarts });
    if (state.released) return true;
    if (sup.generation !== generation) return false;
    state.confirmed = true;
  } catch (error) {
    // Lost again while being made: the next incarnation's rejoin makes it (the loss counted one more restart).
    if (sup.generation !== generation || state.released) return false;
    state.failure = new RRefError('RREF_OWNER_LOST', `RRef ${state.rrefId} could not be made again on the restarted '${state.owner}'`, { cause: error });
  }
  sup.back = undefined;
  back.resolve();
  for (const wake of [...sup.waiters]) wake();
  return false;
}

/**
 * `state` is released while its object waits for its owner to come back: it
 * is not made again, and what waited (its delete, retries) goes on at once.
 */
export function releasedWhileAway(state: UserState): void {
  const back = state.supervision?.back;
  if (back === undefined) return;
  state.supervision!.back = undefined;
  state.failure = new RRefError('RREF_RELEASED', `RRef ${state.rrefId} was released`);
  back.resolve();
  wakeWaiters(state);
}

/**
 * Resolves once the object of `state` was lost after generation `generation`
 * and made again (or lost for good: the retry then fails as the RRef does).
 */
export function backAfter(state: UserState, generation: number): Promise<void> {
  const sup = state.supervision!;
  const done = () => state.failure !== undefined || state.released || (sup.generation > generation && sup.back === undefined);
  if (done()) return Promise.resolve();
  return new Promise((resolve) => {
    const wake = () => {
      if (!done()) return;
      sup.waiters.delete(wake);
      resolve();
    };
    sup.waiters.add(wake);
  });
}

/**
 * Resolves once `name` is a member again as another instance than `inst`
 * (a restarted worker), or rejects once `budget` is spent.
 */
export function nextIncarnation(members: MembersView, name: string, inst: string | undefined, budget: Budget): Promise<void> {
  const back = () => members.get(name) !== undefined && members.instanceOf(name) !== inst;
  const left = budget.left();
  const view = members.membership$.pipe(filter(back), take(1));
  return firstValueFrom(left === Infinity ? view : view.pipe(timeout(Math.max(0, left)))).then(() => undefined);
}

/** Wakes the calls waiting to retry on `state` (it failed for good or was released). */
export function wakeWaiters(state: UserState): void {
  for (const wake of [...(state.supervision?.waiters ?? [])]) wake();
}

/**
 * Runs `attempt` once, and again up to `retries` times when the callee died
 * under it (WorkerUnavailableError), after `comeBack` (the callee's next
 * incarnation, or the object's re-creation) resolves, all within `budget`.
 * `idempotent` says whether the call may run twice: retries of anything else
 * are refused before anything is sent.
 */
export async function withRetries<T>(
  options: CallOptions,
  budget: Budget,
  idempotent: () => boolean,
  what: string,
  attempt: (rest: CallOptions) => Promise<T>,
  comeBack: () => Promise<void>,
): Promise<T> {
  const retries = retriesOf(options);
  if (retries > 0 && !idempotent()) {
    throw new InvalidArgumentError(`${what} is not declared idempotent: retries would run it more than once (declare it with { idempotent })`);
  }
  for (let attempts = 0; ; attempts++) {
    try {
      return await attempt(budget.rest(options));
    } catch (error) {
      if (attempts >= retries || !(error instanceof WorkerUnavailableError)) throw error;
      await budget.wait(comeBack(), () => `the callee of ${what} to come back for a retry`);
    }
  }
}
