/**
 * What an XML-RPC method name runs: `worker.function` (a registered function,
 * a registered class, constructed with `remote` and returned as a handle, or
 * `tf.<op>`), `rref.toHere/call/release` on a handle, and
 * `system.listMethods/methodHelp/multicall`.
 * @module
 */
import { InvalidArgumentError, UnknownFunctionError } from '@tensorbus/core';
import { GatewayError } from './errors.js';
import type { RpcAgent } from '@tensorbus/actors/internal';
import { tfOpByName, tfOpNames } from '@tensorbus/actors/internal';
import { WORKER_NAME_PATTERN } from '@tensorbus/actors/internal';
import { faultOf } from './faults.js';
import type { HandleTable } from './handles.js';
import type { IdentityAgents } from './identities.js';
import type { Listings } from './listings.js';
import { withRetry, type RetryPolicy } from './retry.js';
import type { RequestBudget } from './values-in.js';

/** What serving one request needs. */
export interface RequestContext {
  agent: RpcAgent;
  client: string;
  handles: HandleTable;
  listings: Listings;
  own: IdentityAgents;
  budget: RequestBudget;
  timeoutMs: number;
  /** Aborted when the client goes away: its calls are cancelled. */
  signal: AbortSignal;
  retry: RetryPolicy;
  /** The worker the request went to (for the log), once known. */
  worker?: string;
  /** Calls sent again after a never-delivered failure. */
  retries: { count: number };
  /** Faults inside a multicall (for the log). */
  innerFaults: number;
}

const SYSTEM_HELP: Record<string, string> = {
  'system.listMethods': 'system.listMethods(): the methods of every worker in the namespace (worker.function), rref.* and system.*',
  'system.methodHelp': 'system.methodHelp(name): what a method does',
  'system.multicall': 'system.multicall([{methodName, params}, ...]): runs the calls in order; each result is [value] or a fault struct',
  'rref.toHere': 'rref.toHere(handle): a copy of the value the handle refers to',
  'rref.call': 'rref.call(handle, method, [args]): runs the method of the referenced object on its owner',
  'rref.release': 'rref.release(handle): lets go of the reference; the handle is no longer valid',
};

/** A method name `rref.call` passes on: a JavaScript identifier. */
const METHOD = /^[A-Za-z_$][A-Za-z0-9_$]{0,127}$/;

/** Runs `methodName` with `params`. */
export async function dispatch(methodName: string, params: unknown[], ctx: RequestContext, inMulticall = false): Promise<unknown> {
  switch (methodName) {
    case 'system.listMethods':
      return listMethods(ctx);
    case 'system.methodHelp':
      return methodHelp(stringParam(params, 0, 'the method name'), ctx);
    case 'system.multicall':
      if (inMulticall) throw new InvalidArgumentError('system.multicall cannot be nested');
      return multicall(params[0], ctx);
    case 'rref.toHere': {
      const rref = ctx.handles.get(ctx.client, params[0]);
      ctx.worker = rref.ownerName();
      return rref.toHere({ timeoutMs: ctx.timeoutMs, signal: ctx.signal });
    }
    case 'rref.call': {
      const rref = ctx.handles.get(ctx.client, params[0]);
      const method = stringParam(params, 1, 'the method name');
      const args = params[2] ?? [];
      if (!Array.isArray(args)) throw new InvalidArgumentError('rref.call(handle, method, args): args must be an array');
      ctx.worker = rref.ownerName();
      // The proxy has no function for the names that would make it a promise or a class ('then', 'constructor', ...).
      const call = METHOD.test(method) ? (rref.rpcSync({ timeoutMs: ctx.timeoutMs, signal: ctx.signal }) as Record<string, unknown>)[method] : undefined;
      if (typeof call !== 'function') throw new UnknownFunctionError(`the value of this handle has no method ${JSON.stringify(method.slice(0, 60))} callable through the gateway`);
      return withRetry(ctx.retry, () => (call as (...a: unknown[]) => Promise<unknown>)(...args), ctx.retries);
    }
    case 'rref.release':
      ctx.worker = ctx.handles.get(ctx.client, params[0]).ownerName();
      await ctx.handles.release(ctx.client, params[0]);
      return true;
    default:
      return callWorker(methodName, params, ctx);
  }
}

function stringParam(params: unknown[], index: number, what: string): string {
  const value = params[index];
  if (typeof value !== 'string') throw new InvalidArgumentError(`${what} (parameter ${index + 1}) must be a string`);
  return value;
}

/** `worker` and `function` of a method name, or UnknownFunctionError. */
function split(methodName: string, ctx: RequestContext): { worker: string; fn: string } {
  const dot = methodName.indexOf('.');
  const worker = methodName.slice(0, dot);
  const fn = methodName.slice(dot + 1);
  if (dot <= 0 || fn === '' || !WORKER_NAME_PATTERN.test(worker) || worker === 'system' || worker === 'rref') {
    throw new UnknownFunctionError(`no method '${methodName}': methods are worker.function, rref.* and system.* (see system.listMethods)`);
  }
  // Protocol functions are the workers' business, and the gateway's own agents are not there to be called.
  if (fn.startsWith('tb.')) throw new UnknownFunctionError(`worker '${worker}' has no function '${fn}' callable through the gateway`);
  if (ctx.own.isOwn(worker)) throw new UnknownFunctionError(`'${worker}' is this gateway, not a worker`);
  return { worker, fn };
}

async function callWorker(methodName: string, params: unknown[], ctx: RequestContext): Promise<unknown> {
  const { worker, fn } = split(methodName, ctx);
  ctx.worker = worker;
  if (fn.startsWith('tf.')) {
    if (!tfOpByName(fn)) throw new UnknownFunctionError(`worker '${worker}' has no function '${fn}'`);
    return withRetry(ctx.retry, () => ctx.agent.rpcSync(worker, fn, params as [], { timeoutMs: ctx.timeoutMs, signal: ctx.signal }), ctx.retries);
  }
  const listing = await withRetry(ctx.retry, () => ctx.listings.of(ctx.agent, worker, ctx.timeoutMs), ctx.retries);
  if (listing.entries.get(fn)?.kind === 'class') {
    // remote() returns at once; a failed construction surfaces at the handle's first use (RREF_CREATION_FAILED), as in PyTorch.
    return ctx.agent.remote(worker, fn, params as []);
  }
  return withRetry(ctx.retry, () => ctx.agent.rpcSync(worker, fn, params as [], { timeoutMs: ctx.timeoutMs, signal: ctx.signal }), ctx.retries);
}

async function listMethods(ctx: RequestContext): Promise<string[]> {
  const out = Object.keys(SYSTEM_HELP);
  const workers = ctx.agent.workers().map((w) => w.name).filter((name) => !ctx.own.isOwn(name)).sort();
  const listings = await Promise.all(workers.map((worker) => ctx.listings.of(ctx.agent, worker, Math.min(ctx.timeoutMs || 5_000, 5_000)).catch(() => undefined)));
  const ops = tfOpNames();
  workers.forEach((worker, i) => {
    const listing = listings[i];
    if (!listing) return; // did not answer: left out rather than failing the whole listing
    for (const name of listing.entries.keys()) out.push(`${worker}.${name}`);
    // Every worker serves the allowed TensorFlow.js ops (`tf.<op>`).
    for (const op of ops) out.push(`${worker}.${op}`);
  });
  return out;
}

async function methodHelp(name: string, ctx: RequestContext): Promise<string> {
  const fixed = SYSTEM_HELP[name];
  if (fixed) return fixed;
  const { worker, fn } = split(name, ctx);
  if (fn.startsWith('tf.')) {
    if (!tfOpByName(fn)) throw new UnknownFunctionError(`worker '${worker}' has no function '${fn}'`);
    return `TensorFlow.js op ${fn} on worker '${worker}': tensors as {dtype, shape, data} structs (see docs/gateway.md)`;
  }
  const entry = (await ctx.listings.of(ctx.agent, worker, ctx.timeoutMs, true)).entries.get(fn);
  if (!entry) throw new UnknownFunctionError(`worker '${worker}' has no function '${fn}'`);
  const what = entry.kind === 'class' ? `class ${fn} on worker '${worker}' (${entry.arity} constructor parameters): returns an RRef handle` : `function ${fn} on worker '${worker}' (${entry.arity} parameters)`;
  return entry.doc ? `${what}: ${entry.doc}` : what;
}

async function multicall(calls: unknown, ctx: RequestContext): Promise<unknown[]> {
  if (!Array.isArray(calls)) throw new InvalidArgumentError('system.multicall takes one array of {methodName, params} structs');
  if (calls.length > ctx.budget.limits.maxMulticall) throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `system.multicall holds more than ${ctx.budget.limits.maxMulticall} calls`);
  const results: unknown[] = [];
  // In order, one after another: a later call may use what an earlier one made (as Python's MultiCall expects).
  for (const call of calls) {
    // The client went away: the rest of its calls are not made.
    if (ctx.signal.aborted) break;
    const { methodName, params } = (call ?? {}) as { methodName?: unknown; params?: unknown };
    const inner: RequestContext = { ...ctx, worker: undefined };
    try {
      if (typeof methodName !== 'string' || (params !== undefined && !Array.isArray(params))) {
        throw new InvalidArgumentError('each multicall entry is a struct {methodName: string, params: array}');
      }
      results.push([await dispatch(methodName, (params as unknown[] | undefined) ?? [], inner, true)]);
    } catch (error) {
      ctx.innerFaults++;
      const fault = faultOf(error, inner.worker);
      results.push({ faultCode: fault.faultCode, faultString: fault.faultString });
    }
  }
  return results;
}
