/**
 * TensorFlow.js ops as builtins: `rpcSync('w1', tf.add, [a, b])` sends the
 * name `tf.add`, and the callee runs its own `tf.add`. Only tensor ops are
 * callable; functions that change global state (backends, kernels, memory,
 * flags) or take callbacks are not.
 * @module
 */
import { tf } from '@tensorbus/core';

/** tf namespace members that are not tensor ops and must not run from the wire. */
const NOT_OPS = new Set([
  'backend', 'copyRegisteredKernels', 'deprecationWarn', 'disableDeprecationWarnings', 'dispose',
  'disposeVariables', 'enableDebugMode', 'enableProdMode', 'engine', 'env', 'findBackend',
  'findBackendFactory', 'getBackend', 'getGradient', 'getKernel', 'getKernelsForBackend', 'grad',
  'grads', 'customGrad', 'keep', 'memory', 'nextFrame', 'profile', 'ready', 'registerBackend',
  'registerGradient', 'registerKernel', 'registerOp', 'removeBackend', 'setBackend', 'setPlatform',
  'tidy', 'time', 'unregisterGradient', 'unregisterKernel', 'valueAndGrad', 'valueAndGrads',
  'variableGrads', 'loadLayersModel', 'loadGraphModel', 'sequential', 'model', 'input',
  'registerCallbackConstructor', 'setWasmPath', 'setWasmPaths', 'setThreadsCount', 'getThreadsCount',
  'fromPixels', 'fromPixelsAsync', 'toPixels', 'browser', 'io', 'data', 'serialization', 'util',
  'version', 'version_core', 'version_layers', 'version_converter', 'version_cpu', 'version_webgl',
]);

let byFunction: Map<unknown, string> | undefined;

function table(): Map<unknown, string> {
  if (!byFunction) {
    byFunction = new Map();
    for (const [key, value] of Object.entries(tf)) {
      if (typeof value === 'function' && !NOT_OPS.has(key) && /^[a-z]/.test(key)) byFunction.set(value, `tf.${key}`);
    }
  }
  return byFunction;
}

/** `tf.<op>` for a TensorFlow.js op function, else undefined. */
export function tfOpName(fn: unknown): string | undefined {
  return table().get(fn);
}

/** The op function for `tf.<op>`, else undefined. */
export function tfOpByName(name: string): ((...args: unknown[]) => unknown) | undefined {
  if (!name.startsWith('tf.')) return undefined;
  const key = name.slice(3);
  if (NOT_OPS.has(key) || !/^[a-z]/.test(key)) return undefined;
  const value = (tf as unknown as Record<string, unknown>)[key];
  return typeof value === 'function' ? (value as (...args: unknown[]) => unknown) : undefined;
}
