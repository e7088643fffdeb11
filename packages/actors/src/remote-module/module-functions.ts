/**
 * The owner side of {@link RemoteModule}, as remote functions:
 *
 *   tb.module.check(moduleRRef)       waits for the module to exist; checks it has forward and parameters
 *   tb.module.params(moduleRRef)      RRefs to its parameters (the same ones on every call)
 *   tb.module.dispose(moduleRRef)     frees its weights: its own dispose(), else each parameter
 * @module
 */
import { InvalidArgumentError, tf } from '@tensorbus/core';
import { currentAgent } from '../init.js';
import { remoteFunction } from '../registry/functions.js';
import type { RRef } from '../rref/rref.js';

/**
 * The owner RRefs of each module's parameters. An RRef's owner disposes the
 * tensors of its value once nobody refers to it any more: holding one owner
 * handle per parameter for as long as the module lives keeps users'
 * releases (or garbage collection) from disposing the module's weights.
 */
const parameterRefs = new WeakMap<object, Array<RRef<tf.Variable>>>();

/** What a module is: a forward pass, and its trainable parameters. */
export interface Module {
  forward(...args: never[]): unknown;
  parameters(): tf.Variable[];
}

async function moduleOf(ref: RRef<unknown>): Promise<Module> {
  const value = await ref.toHere();
  const module = value as Partial<Module> | null;
  if (module === null || typeof module !== 'object' || typeof module.forward !== 'function' || typeof module.parameters !== 'function') {
    throw new InvalidArgumentError(`a module needs forward(...args) and parameters() methods; ${describe(value)} lacks them`);
  }
  return module as Module;
}

function describe(value: unknown): string {
  const name = (value as { constructor?: { name?: string } } | null)?.constructor?.name;
  return name ? `an instance of ${name}` : typeof value;
}

/** Resolves once the module exists here; rejects if it is not a module. */
export const checkModule = remoteFunction('tb.module.check', async (ref: RRef<unknown>): Promise<null> => {
  await moduleOf(ref);
  return null;
});

/** RRefs to the module's parameters. */
export const moduleParameters = remoteFunction('tb.module.params', async (ref: RRef<unknown>): Promise<Array<RRef<tf.Variable>>> => {
  const module = await moduleOf(ref);
  const params = module.parameters();
  if (!Array.isArray(params) || params.some((p) => !(p instanceof tf.Variable))) {
    throw new InvalidArgumentError('parameters() must return an array of tf.Variables');
  }
  let refs = parameterRefs.get(module);
  if (refs === undefined || refs.length !== params.length || refs.some((r, i) => r.localValue() !== params[i])) {
    const agent = currentAgent();
    // Kept: these handles outlive this call (they are returned on every call, and released by tb.module.dispose).
    refs = params.map((p) => agent.rref(p).keep());
    parameterRefs.set(module, refs);
  }
  return refs;
});

/** Frees the module's weights: its own `dispose()` if it has one, else each of its parameters. */
export const disposeModule = remoteFunction('tb.module.dispose', async (ref: RRef<unknown>): Promise<null> => {
  const module = await moduleOf(ref);
  const own = (module as Partial<{ dispose(): void }>).dispose;
  if (typeof own === 'function') own.call(module);
  else for (const p of module.parameters()) if (p instanceof tf.Variable && !p.isDisposed) p.dispose();
  const refs = parameterRefs.get(module);
  parameterRefs.delete(module);
  await Promise.all((refs ?? []).map((r) => r.release().catch(() => undefined)));
  return null;
});
