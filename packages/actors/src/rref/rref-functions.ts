/**
 * The owner-side functions of the RRef protocol, registered like any remote
 * function and called through the ordinary call path (so timeouts, failure
 * detection and autograd contexts apply to them as to any call). An unknown
 * RRef id fails at once and leaves nothing behind.
 * @module
 */
import { AutogradError, RRefError, type tf } from '@tensorbus/core';
import { servingPlugin, type CallScope } from '../agent/host.js';
import { AUTOGRAD } from '../autograd/autograd-key.js';
import { collectTensors, currentCallMayHoldTensors } from '../agent/call-tensors.js';
import { forEachTensor } from '../tensors.js';
import { accountableName, isWireId } from '../peer-limits.js';
import { describeCalls, isRegisteredClass, lookupCallable, remoteFunction } from '../registry/functions.js';
import { adoptTensors } from './held-tensors.js';
import { mayUse, unknownRRef } from './holders.js';
import type { OwnerEntry } from './owner-table.js';
import { runRemoteMethod } from './remote-methods.js';
import type { RRefManager } from './rref-manager.js';
import { RREFS } from './rref-key.js';
import { creationFailed } from './rref.js';
import { BACKWARD_FN, CALL_FN, checkCreateSpec, CREATE_FN, FETCH_FN, type CreateSpec } from './rref-protocol.js';
import { scalarRoot } from './rref-backward.js';
import { isCheckpointable, restoreObject, saveObject } from './object-checkpoints.js';

/** The RRef manager of the worker serving the current call, and the call. */
function serving(): { rrefs: RRefManager; scope: CallScope } {
  const { plugin, scope } = servingPlugin(RREFS, 'an RRef protocol function');
  return { rrefs: plugin, scope };
}

/**
 * The entry of `rrefId`, for the caller of the call being served: a reference
 * is used only once its owner confirmed it, so a missing entry is gone (or
 * never was); an entry the caller holds no fork of is answered the same way
 * (holders.ts).
 */
export function entryOf(rrefs: RRefManager, rrefId: unknown, scope: CallScope): OwnerEntry {
  const entry = isWireId(rrefId) ? rrefs.owners.get(rrefId) : undefined;
  if (!entry || !mayUse(entry, { name: scope.caller, verified: scope.verified, origin: scope.origin }, scope.host)) throw unknownRRef(rrefs.selfName, rrefId);
  entry.lastUsed = Date.now();
  return entry;
}

/** The entry's value once made (at once when it is: no promise per call of a made value); its creation's failure otherwise. */
export function valueOf(entry: OwnerEntry): unknown {
  return entry.created ? madeValue(entry) : entry.ready.then(() => madeValue(entry));
}

function madeValue(entry: OwnerEntry): unknown {
  if (entry.failure !== undefined) throw creationFailed(entry.rrefId, entry.failure);
  return entry.value;
}

/** Makes the value of a new RRef on this worker (its owner) [remote()]. */
export const createValue = remoteFunction(CREATE_FN, async (rrefId: string, forkId: string | null, spec: CreateSpec, returnValue?: unknown): Promise<unknown> => {
  const { plugin: rrefs, scope } = servingPlugin(RREFS, 'an RRef protocol function');
  checkCreateSpec(spec);
  // A missing target fails before anything is kept for the new value.
  const target = 'target' in spec ? entryOf(rrefs, spec.target, scope) : undefined;
  const entry = rrefs.openForCreation(rrefId, forkId, scope.caller, accountableName(scope), scope.meta);
  if (!entry) return returnValue === true ? valueOf(entryOf(rrefs, rrefId, scope)) : null;
  try {
    let value: unknown;
    if (target === undefined) {
      const { fn, supervised, restart } = spec as Extract<CreateSpec, { fn: string }>;
      const callable = lookupCallable(fn, rrefs.selfName);
      entry.ownsVariables = isRegisteredClass(fn);
      if (entry.ownsVariables) value = construct(callable.invoke, spec.args);
      else value = await callable.invoke(spec.args);
      if (supervised === true) {
        entry.supervised = true;
        if (restart !== undefined && restart > 0) await restoreMade(scope, value, rrefId, restart);
      }
    } else {
      const { method } = spec as { method: string };
      value = await runRemoteMethod(await valueOf(target), method, spec.args, rrefs.selfName);
      rrefs.owners.rescan(target);
    }
    entry.settle(value);
  } catch (error) {
    entry.settle(undefined, error);
    throw error;
  }
  if (entry.failure !== undefined) throw entry.failure;
  // The creator's toHere() came before the creation went out: the value goes back with this reply, as a fetch's would.
  return returnValue === true ? entry.value : null;
});

/**
 * A new instance of a registered class: the tensors its constructor was given
 * or made are the instance's (kept while it lives, freed with it), whether it
 * stored them where the owner can see (its fields) or not (`#private` fields,
 * closures). A constructor runs once per instance, so this keeps at most what
 * the constructor saw.
 */
function construct(invoke: (args: unknown[]) => unknown, args: unknown[]): unknown {
  const { result, made } = collectTensors(() => invoke(args));
  const given: tf.Tensor[] = [];
  forEachTensor(args, (tensor) => given.push(tensor));
  adoptTensors(result, [...given, ...made]);
  return result;
}

/** A copy of the value, for a user's `toHere()`. */
export const fetchValue = remoteFunction(FETCH_FN, async (rrefId: string) => {
  const { rrefs, scope } = serving();
  return valueOf(entryOf(rrefs, rrefId, scope));
});

/** Runs a method of the value, for a user's proxies. */
export const callValueMethod = remoteFunction(CALL_FN, async (rrefId: string, method: string, args: unknown[]) => {
  const { rrefs, scope } = serving();
  const entry = entryOf(rrefs, rrefId, scope);
  if (!Array.isArray(args)) throw new RRefError('RREF_OWNER_LOST', 'malformed RRef method call');
  const result = await runRemoteMethod(await valueOf(entry), method, args, rrefs.selfName);
  // Tensors the method stored in the value are the value's now (kept, counted); before the reply disposes transient ones.
  // A method given no tensor, returning none and leaving none it made alive cannot have stored or handed
  // back one: the walk of the value, whose cost grows with the value, is skipped. A tensor such a method
  // only dropped from the value is let go at the value's next rescan or at its release.
  if (currentCallMayHoldTensors() || hasTensor(args) || hasTensor(result)) rrefs.owners.rescan(entry);
  // A supervised object's state is saved before the reply: what a caller saw done survives its owner's restart.
  const store = scope.host.options.checkpoints;
  if (entry.supervised && store !== undefined && isCheckpointable(entry.value)) await saveObject(store, entry.value, entry.rrefId);
  return result;
});

/** A supervised object made again on a restarted owner takes back its last checkpoint, when its class says how. */
async function restoreMade(scope: CallScope, value: unknown, rrefId: string, restart: number): Promise<void> {
  const store = scope.host.options.checkpoints;
  if (store === undefined || !isCheckpointable(value)) return;
  const outcome = await restoreObject(store, value, rrefId);
  if (outcome instanceof Error) scope.host.options.logger?.error(`[tensorbus] ${scope.host.name}: RRef ${rrefId}'s object (restart ${restart}) starts fresh: its checkpoint was refused: ${outcome.message}`);
}

/** True when `value` holds a tensor (the call's arguments: plain containers). */
function hasTensor(value: unknown): boolean {
  let found = false;
  forEachTensor(value, () => (found = true));
  return found;
}

/** A name from the wire, fit for one log line. */
function shown(name: unknown): string {
  return typeof name === 'string' ? `'${name.slice(0, 128)}'` : '(malformed)';
}

// The callee's log names the user's constructor or method, not these functions.
describeCalls(createValue, (args) => {
  const spec = args[2] as Partial<{ fn: unknown; method: unknown }> | null | undefined;
  if (typeof spec?.method === 'string') return `method ${shown(spec.method)} (for remote())`;
  return `${isRegisteredClass(String(spec?.fn)) ? 'constructor' : 'function'} ${shown(spec?.fn)} (for remote())`;
});
describeCalls(callValueMethod, (args) => `method ${shown(args[1])} of an RRef`);

/** The owner's side of `rref.backward()`: the call must carry the context it names (a caller cannot reach into a context it is not in). */
export const backwardFromValue = remoteFunction(BACKWARD_FN, async (rrefId: unknown, contextId: unknown, retainGraph: unknown): Promise<null> => {
  const { plugin: autograd, scope } = servingPlugin(AUTOGRAD, 'rref backward');
  if (typeof contextId !== 'string' || autograd.currentContextId() !== contextId) {
    throw new AutogradError('AUTOGRAD_CONTEXT_NOT_FOUND', `rref backward: this call does not belong to autograd context ${String(contextId).slice(0, 64)} on '${scope.host.name}'`);
  }
  const entry = entryOf(servingPlugin(RREFS, 'rref backward').plugin, rrefId, scope);
  await autograd.backward(contextId, [scalarRoot(await valueOf(entry), entry.rrefId)], { retainGraph: retainGraph === true });
  return null;
});
