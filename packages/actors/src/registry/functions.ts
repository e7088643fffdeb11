/**
 * The registries of callable functions and classes, keyed by name. A worker
 * can only run what its own code base registered (or a TensorFlow.js op):
 * nothing from the wire is ever evaluated.
 * @module
 */
import { InvalidArgumentError, UnknownFunctionError } from '@tensorbus/core';
import { tfOpByName, tfOpName } from './tf-builtins.js';
import { emitWarning } from '../platform/process.js';

/** A function registered for remote calls, still callable locally. */
export type RemoteFunction<A extends unknown[] = unknown[], R = unknown> = ((...args: A) => R) & {
  /** The name callers use on the wire. */
  readonly remoteName: string;
};

/** A class registered for remote construction; `new` still works locally. */
export type RemoteClass<A extends unknown[] = unknown[], T = unknown> = (new (...args: A) => T) & {
  readonly remoteName: string;
};

/** What a caller may name as the function to run. */
export type Callable<A extends unknown[] = unknown[], R = unknown> =
  | RemoteFunction<A, R>
  | RemoteClass<A, R>
  | ((...args: A) => R)
  | string;

/** Options of {@link remoteFunction}. */
export interface RemoteFunctionOptions {
  /**
   * Dispose the tensors a call made that it neither returned nor kept, when
   * the call ends (default true; see docs/rpc.md "Tensors a call makes").
   * `false` leaves them all to the function, as plain TensorFlow.js would:
   * for functions that manage tensor memory themselves (caches, pools).
   */
  tidy?: boolean;
  /** One line saying what the function does, for callers that ask (the XML-RPC gateway's `system.methodHelp`). */
  doc?: string;
  /**
   * Running the function twice has the effect of running it once: a caller
   * may then ask for `{ retries }` (docs/supervision.md). Default false:
   * calls are at most once.
   */
  idempotent?: boolean;
}

/** Options of {@link remoteClass}. */
export interface RemoteClassOptions {
  /**
   * The methods whose repetition has the effect of one run (`true`: all of
   * them): RRef proxies may ask for `{ retries }` on these only.
   */
  idempotent?: boolean | readonly string[];
}

/** A resolved entry: run it with `args`. */
export interface RegistryEntry {
  name: string;
  kind: 'function' | 'class' | 'tfop';
  /** False when the function manages the tensors its calls make (see {@link RemoteFunctionOptions.tidy}). */
  tidy: boolean;
  invoke(args: unknown[]): unknown;
  /** What it does, as `remoteFunction(name, fn, { doc })` said. */
  doc?: string;
  /** Number of declared parameters (`fn.length`). */
  arity?: number;
  /** A function: it is idempotent; a class: the idempotent methods (`true`: all). */
  idempotent?: boolean | ReadonlySet<string>;
  /** What a call of it with `args` runs, for the callee's log (protocol functions name the user's method). */
  describe?(args: unknown[]): string;
}

const entries = new Map<string, RegistryEntry>();

function register(entry: RegistryEntry, target: object): void {
  const existing = entries.get(entry.name);
  if (existing && (existing as { target?: object }).target !== target) {
    emitWarning(`tensorbus: '${entry.name}' was registered twice; the later definition wins`);
  }
  entries.set(entry.name, Object.assign(entry, { target }));
}

function checkName(name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0 || name.startsWith('tf.')) {
    throw new InvalidArgumentError(`invalid remote name ${JSON.stringify(name)}: use a non-empty string not starting with 'tf.'`);
  }
}

/**
 * Registers `fn` under `name` for remote calls in every process that imports
 * the defining module, and returns it marked with its name.
 *
 * @example
 * ```ts
 * export const add = remoteFunction('math.add', (a: tf.Tensor, b: tf.Tensor) => tf.add(a, b));
 * const y = await agent.rpcSync('w1', add, [a, b]); // typed Promise<tf.Tensor>
 * ```
 *
 * Tensors a call makes and neither returns nor keeps (`tf.keep`, a
 * `tf.Variable`) are disposed when the call ends, awaits included, as if the
 * function were wrapped in `tf.tidy`; `{ tidy: false }` turns that off.
 */
export function remoteFunction<A extends unknown[], R>(name: string, fn: (...args: A) => R, options: RemoteFunctionOptions = {}): RemoteFunction<A, R> {
  checkName(name);
  if (typeof fn !== 'function') throw new InvalidArgumentError(`remoteFunction('${name}') needs a function`);
  if (options.tidy !== undefined && typeof options.tidy !== 'boolean') throw new InvalidArgumentError(`remoteFunction('${name}'): options.tidy must be a boolean`);
  if (options.doc !== undefined && typeof options.doc !== 'string') throw new InvalidArgumentError(`remoteFunction('${name}'): options.doc must be a string`);
  if (options.idempotent !== undefined && typeof options.idempotent !== 'boolean') throw new InvalidArgumentError(`remoteFunction('${name}'): options.idempotent must be a boolean`);
  const idempotent = options.idempotent ?? false;
  register({ name, kind: 'function', tidy: options.tidy ?? true, doc: options.doc, arity: fn.length, idempotent, invoke: (args) => fn(...(args as A)) }, fn);
  Object.defineProperty(fn, 'remoteName', { value: name, enumerable: false, configurable: true });
  return fn as RemoteFunction<A, R>;
}

/**
 * Registers a class under `name`: `remote(to, Class, args)` constructs an
 * instance on the callee, and RRef proxies call its methods.
 *
 * @example
 * ```ts
 * export const Counter = remoteClass('Counter', class { n = 0; inc(k: number) { return (this.n += k); } });
 * ```
 */
export function remoteClass<A extends unknown[], T>(name: string, Class: new (...args: A) => T, options: RemoteClassOptions = {}): RemoteClass<A, T> {
  checkName(name);
  if (typeof Class !== 'function') throw new InvalidArgumentError(`remoteClass('${name}') needs a class`);
  const declared = options.idempotent ?? false;
  if (typeof declared !== 'boolean' && !(Array.isArray(declared) && declared.every((m) => typeof m === 'string'))) {
    throw new InvalidArgumentError(`remoteClass('${name}'): options.idempotent must be a boolean or a list of method names`);
  }
  const idempotent = typeof declared === 'boolean' ? declared : new Set<string>(declared);
  register({ name, kind: 'class', tidy: true, arity: Class.length, idempotent, invoke: (args) => construct(name, Class, args as A) }, Class);
  Object.defineProperty(Class, 'remoteName', { value: name, enumerable: false, configurable: true });
  return Class as RemoteClass<A, T>;
}

/**
 * `new Class(...args)`, with TensorFlow.js's refusal of a second variable of
 * one name (a class that names its `tf.variable`s, constructed twice in one
 * process) turned into what to do about it. tfjs gives that error no code:
 * its message is all there is to go by.
 */
function construct<A extends unknown[], T>(name: string, Class: new (...args: A) => T, args: A): T {
  try {
    return new Class(...args);
  } catch (error) {
    const taken = error instanceof Error ? /Variable with name (.+) was already registered/.exec(error.message) : null;
    if (!taken) throw error;
    throw new InvalidArgumentError(
      `remote class '${name}' names a tf.variable '${taken[1]}' that another instance in this process already has: ` +
        'TensorFlow.js variable names are unique per process, so leave the name out (tfjs then makes a unique one) ' +
        "or make it unique per instance (e.g. `${prefix}/${instanceId}`), or dispose() the earlier instance first",
      { cause: error },
    );
  }
}

/** The wire name of what a caller passed as `fn`, or throws. */
export function callableName(fn: unknown): string {
  if (typeof fn === 'string') {
    if (fn.length === 0) throw new InvalidArgumentError('the function name is empty');
    return fn;
  }
  if (typeof fn === 'function') {
    const remoteName = (fn as { remoteName?: unknown }).remoteName;
    if (typeof remoteName === 'string') return remoteName;
    const op = tfOpName(fn);
    if (op) return op;
    throw new InvalidArgumentError(
      `function '${fn.name || '(anonymous)'}' is not registered: wrap it with remoteFunction(name, fn) or remoteClass(name, Class)`,
    );
  }
  throw new InvalidArgumentError('fn must be a remoteFunction, a remoteClass, a TensorFlow.js op or a registered name');
}

/**
 * Names what the calls of a (protocol) function run in the callee's log: the
 * user's constructor or method rather than the protocol function. `describe`
 * gets the call's arguments as they arrived: it must not trust them.
 */
export function describeCalls(fn: { readonly remoteName: string }, describe: (args: unknown[]) => string): void {
  const entry = entries.get(fn.remoteName);
  if (entry) entry.describe = describe;
}

/** What a call of `entry` with `args` runs, for the callee's log. */
export function callDescription(entry: RegistryEntry, args: unknown[]): string {
  if (entry.describe) {
    try {
      return entry.describe(args);
    } catch {
      // Falls back to the function's own name.
    }
  }
  return `${entry.kind === 'class' ? 'constructor' : 'function'} '${entry.name}'`;
}

/** Finds what `name` stands for on this worker, or throws {@link UnknownFunctionError}. */
export function lookupCallable(name: string, worker: string): RegistryEntry {
  const entry = entries.get(name);
  if (entry) return entry;
  const op = tfOpByName(name);
  if (op) return { name, kind: 'tfop', tidy: true, invoke: (args) => op(...args) };
  throw new UnknownFunctionError(
    `worker '${worker}' has no function '${name}': register it with remoteFunction/remoteClass in a module that worker imports`,
  );
}

/**
 * True when this process registered `name` as idempotent: a function declared
 * so, or (with `method`) a class declaring that method so.
 */
export function isIdempotent(name: string, method?: string): boolean {
  const declared = entries.get(name)?.idempotent;
  if (declared === undefined || typeof declared === 'boolean') return declared === true;
  return method !== undefined && declared.has(method);
}

/** True when `name` is a registered class. */
export function isRegisteredClass(name: string): boolean {
  return entries.get(name)?.kind === 'class';
}

/** What {@link listRegistered} says of one registered function or class. */
export interface RegisteredSummary {
  name: string;
  kind: 'function' | 'class';
  arity: number;
  doc?: string;
}

/** The functions and classes registered in this process, protocol ones (`tb.*`) left out, sorted by name. */
export function listRegistered(): RegisteredSummary[] {
  const out: RegisteredSummary[] = [];
  for (const entry of entries.values()) {
    if (entry.kind === 'tfop' || entry.name.startsWith('tb.')) continue;
    const summary: RegisteredSummary = { name: entry.name, kind: entry.kind, arity: entry.arity ?? 0 };
    if (entry.doc !== undefined) summary.doc = entry.doc;
    out.push(summary);
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
