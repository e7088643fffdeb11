/**
 * The owner-side functions of the RRef protocol, registered like any remote
 * function and called through the ordinary call path (so timeouts, failure
 * detection and autograd contexts apply to them as to any call).
 * @module
 */
import { RRefError, UnknownFunctionError } from '@tensorbus/core';
import { callScope } from '../agent/call-context.js';
import { lookupCallable, remoteFunction } from '../registry/functions.js';
import type { RRefManager } from './rref-manager.js';
import { creationFailed } from './rref.js';
import type { CreateSpec } from './rref-protocol.js';

/** The RRef manager of the agent serving the current call. */
function manager(): RRefManager {
  const agent = callScope.getStore()?.agent as { rrefs?: RRefManager } | undefined;
  if (!agent?.rrefs) throw new RRefError('RREF_OWNER_LOST', 'RRef functions run only inside calls to an agent');
  return agent.rrefs;
}

async function valueOf(rrefs: RRefManager, rrefId: string): Promise<unknown> {
  const entry = await rrefs.entryFor(rrefId);
  if (!entry) throw new RRefError('RREF_OWNER_LOST', `worker '${rrefs.selfName}' holds no RRef ${rrefId} (released, or its creation failed)`);
  await entry.ready;
  if (entry.failure !== undefined) throw creationFailed(rrefId, entry.failure);
  return entry.value;
}

function methodOf(rrefs: RRefManager, target: unknown, method: string): (...args: unknown[]) => unknown {
  const fn = target !== null && typeof target === 'object' ? (target as Record<string, unknown>)[method] : undefined;
  if (typeof fn !== 'function' || method === 'constructor' || method.startsWith('__')) {
    throw new UnknownFunctionError(`the value of this RRef on worker '${rrefs.selfName}' has no method '${method}'`);
  }
  return (fn as (...args: unknown[]) => unknown).bind(target);
}

/** Makes the value of a new RRef on this worker (its owner) [remote()]. */
export const createValue = remoteFunction('tb.rref.create', async (rrefId: string, forkId: string | null, spec: CreateSpec): Promise<null> => {
  const rrefs = manager();
  const caller = callScope.getStore()!.caller;
  const entry = rrefs.openForCreation(rrefId, forkId, caller);
  if (!entry) return null;
  try {
    let value: unknown;
    if ('fn' in spec) value = await lookupCallable(spec.fn, rrefs.selfName).invoke(spec.args);
    else value = await methodOf(rrefs, await valueOf(rrefs, spec.target), spec.method)(...spec.args);
    entry.settle(value);
  } catch (error) {
    entry.settle(undefined, error);
    throw error;
  }
  return null;
});

/** A copy of the value, for a user's `toHere()`. */
export const fetchValue = remoteFunction('tb.rref.fetch', async (rrefId: string) => valueOf(manager(), rrefId));

/** Runs a method of the value, for a user's proxies. */
export const callValueMethod = remoteFunction('tb.rref.call', async (rrefId: string, method: string, args: unknown[]) => {
  const rrefs = manager();
  return methodOf(rrefs, await valueOf(rrefs, rrefId), method)(...args);
});
