/**
 * The one TensorFlow.js instance every tensorbus package uses.
 *
 * `@tensorflow/tfjs-node` (an optional peer) is used when it is installed and
 * loads; otherwise `@tensorflow/tfjs` on the WebAssembly backend; otherwise the
 * plain CPU backend. `TENSORBUS_BACKEND=tensorflow|wasm|cpu` forces a choice.
 * Which one is in use is said once to stderr (silence it with
 * `TENSORBUS_QUIET=1`; a process started by `tensorbus launch`, which said it
 * already, says it only when its own differs: `TENSORBUS_BACKEND_SAID`) and
 * returned by {@link tensorBackend}.
 *
 * @example
 * ```ts
 * import { tf, tensorBackend } from '@tensorbus/core';
 * console.log(tensorBackend()); // 'wasm' on a machine without tfjs-node
 * const y = tf.add(tf.ones([2]), tf.ones([2]));
 * ```
 * @module
 */
import { createRequire } from 'node:module';
import type * as TfNamespace from '@tensorflow/tfjs';
import { speedUpWasmTransposedMatMul } from './wasm-matmul.js';
import { BACKEND_SAID_ENV } from './env.js';

/** The name of the TensorFlow.js backend in use. */
export type TensorBackendName = 'tensorflow' | 'wasm' | 'cpu';

type Tf = typeof TfNamespace;

/**
 * Loads TensorFlow.js's packages, which are CommonJS bundles. `require` reads
 * each once; `import` would first have Node's ESM loader scan every bundle
 * they re-export (several megabytes of source) for its names: about 0.35 s
 * of CPU more per process, and a compile of the scanner on a background
 * thread while the process starts to work. The process gets the same module
 * instances either way (one cache), so a user's own `import` of
 * `@tensorflow/tfjs` shares the engine.
 */
const requirePackage = createRequire(import.meta.url);

interface Loaded {
  tf: Tf;
  backend: TensorBackendName;
  reason: string;
}

function wanted(): TensorBackendName | undefined {
  const value = process.env.TENSORBUS_BACKEND;
  return value === 'tensorflow' || value === 'wasm' || value === 'cpu' ? value : undefined;
}

async function loadNode(): Promise<Loaded | string> {
  try {
    const tfNode = requirePackage('@tensorflow/tfjs-node') as Tf;
    await tfNode.ready();
    return { tf: tfNode, backend: 'tensorflow', reason: '@tensorflow/tfjs-node loaded' };
  } catch (error) {
    const missing = (error as { code?: string }).code === 'MODULE_NOT_FOUND' && firstLine(error).includes("'@tensorflow/tfjs-node'");
    return missing ? '@tensorflow/tfjs-node is not installed' : `@tensorflow/tfjs-node did not load (${firstLine(error)})`;
  }
}

type ProcessEvent = 'uncaughtException' | 'unhandledRejection';

/**
 * Runs `load` and removes the process-wide error handlers it installed: the
 * WebAssembly module's Emscripten glue adds an `uncaughtException` handler
 * that rethrows from inside the glue (every error of the user's then points
 * at tf-backend-wasm.node.js and exits with code 7) and an
 * `unhandledRejection` one; without them, errors are reported as Node reports
 * them.
 */
async function withoutProcessHandlers<T>(load: () => Promise<T>): Promise<T> {
  type Listener = (...args: unknown[]) => void;
  const events: ProcessEvent[] = ['uncaughtException', 'unhandledRejection'];
  const listeners = (event: ProcessEvent) => (process.listeners as (event: string) => Listener[])(event);
  const before = new Map(events.map((event) => [event, new Set(listeners(event))]));
  try {
    return await load();
  } finally {
    for (const event of events) {
      for (const listener of listeners(event)) {
        if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
      }
    }
  }
}

async function loadWasmOrCpu(tfjs: Tf, prefer: 'wasm' | 'cpu', why: string): Promise<Loaded> {
  if (prefer === 'wasm') {
    try {
      const ready = await withoutProcessHandlers(async () => {
        requirePackage('@tensorflow/tfjs-backend-wasm');
        if (!(await tfjs.setBackend('wasm'))) return false;
        await tfjs.ready();
        return true;
      });
      if (ready) {
        speedUpWasmTransposedMatMul(tfjs);
        return { tf: tfjs, backend: 'wasm', reason: why };
      }
      why += '; the WebAssembly backend did not initialise';
    } catch (error) {
      why += `; the WebAssembly backend failed (${firstLine(error)})`;
    }
  }
  await tfjs.setBackend('cpu');
  await tfjs.ready();
  return { tf: tfjs, backend: 'cpu', reason: why };
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}

async function load(): Promise<Loaded> {
  const forced = wanted();
  let why = forced ? `TENSORBUS_BACKEND=${forced}` : '';
  if (forced === undefined || forced === 'tensorflow') {
    const node = await loadNode();
    if (typeof node !== 'string') return node;
    why = forced ? `${why}, but ${node}` : node;
  }
  const tfjs = requirePackage('@tensorflow/tfjs') as Tf;
  return loadWasmOrCpu(tfjs, forced === 'cpu' ? 'cpu' : 'wasm', why);
}

const loaded = await load();

/** How the backends are named to a person. */
const SPOKEN: Record<TensorBackendName, string> = {
  tensorflow: 'native TensorFlow',
  wasm: 'WebAssembly',
  cpu: 'plain JavaScript (slow)',
};


/** The line that says which backend this process uses, and why. */
function backendLine(): string {
  const hint = loaded.reason.includes('tfjs-node is not installed') ? ' (`npm install @tensorflow/tfjs-node` for native speed)' : '';
  return `[tensorbus] TensorFlow.js runs on ${SPOKEN[loaded.backend]} ('${loaded.backend}' backend)${loaded.reason ? `: ${loaded.reason}` : ''}${hint}`;
}

if (process.env.TENSORBUS_QUIET !== '1' && process.env[BACKEND_SAID_ENV] !== loaded.backend) {
  process.stderr.write(`${backendLine()}\n`);
}

/**
 * The values of `exports`, read once into a plain object: tfjs's CommonJS
 * exports are getters (each read is a call and a lookup in another
 * package's exports), and `tf.x` is read on every op a program and the codec
 * run; a plain object's reads cost what a module namespace's do.
 */
function valuesOf(exports: Tf): Tf {
  const values: Record<string, unknown> = {};
  for (const name of Object.keys(exports)) values[name] = (exports as unknown as Record<string, unknown>)[name];
  return values as unknown as Tf;
}

/** The TensorFlow.js namespace in use (tfjs-node, or tfjs on WASM or CPU). */
export const tf: Tf = valuesOf(loaded.tf);

/** The TensorFlow.js types, so `tf.Tensor` works as a type as it does with tfjs itself. */
// eslint-disable-next-line @typescript-eslint/no-namespace
export declare namespace tf {
  export type Tensor<R extends TfNamespace.Rank = TfNamespace.Rank> = TfNamespace.Tensor<R>;
  export type Variable<R extends TfNamespace.Rank = TfNamespace.Rank> = TfNamespace.Variable<R>;
  export type Scalar = TfNamespace.Scalar;
  export type Tensor1D = TfNamespace.Tensor1D;
  export type Tensor2D = TfNamespace.Tensor2D;
  export type Tensor3D = TfNamespace.Tensor3D;
  export type Tensor4D = TfNamespace.Tensor4D;
  export type Rank = TfNamespace.Rank;
  export type DataType = TfNamespace.DataType;
  export type TensorLike = TfNamespace.TensorLike;
  export type NamedTensorMap = TfNamespace.NamedTensorMap;
  export type TensorContainer = TfNamespace.TensorContainer;
  export type Optimizer = TfNamespace.Optimizer;
  export type LayersModel = TfNamespace.LayersModel;
  export type Sequential = TfNamespace.Sequential;
}

/** The TensorFlow.js backend in use: `'tensorflow'`, `'wasm'` or `'cpu'`. */
export function tensorBackend(): TensorBackendName {
  return loaded.backend;
}

/** Why this backend was chosen, for logs and diagnostics. */
export function tensorBackendReason(): string {
  return loaded.reason;
}
