/**
 * The browser's stand-in for tf.ts (package.json `browser` maps one to the
 * other, so a bundler building for a page takes this file): TensorFlow.js on
 * the WebAssembly backend, its `.wasm` files fetched from beside the bundle
 * (the directory of the script that holds this module), else the CPU
 * backend. No tfjs-node, no process handlers, no environment variables; the
 * backend and why are logged once to the console.
 * @module
 */
import * as tfjs from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import type { TensorBackendName } from './tf.js';
import { speedUpWasmTransposedMatMul } from './wasm-matmul.js';

export type { TensorBackendName } from './tf.js';

type Tf = typeof tfjs;

async function load(): Promise<{ backend: TensorBackendName; reason: string }> {
  const where = new URL('./', import.meta.url).href;
  try {
    setWasmPaths(where);
    if (await tfjs.setBackend('wasm')) {
      await tfjs.ready();
      speedUpWasmTransposedMatMul(tfjs);
      return { backend: 'wasm', reason: `in a browser, WebAssembly files from ${where}` };
    }
  } catch (error) {
    await tfjs.setBackend('cpu');
    await tfjs.ready();
    return { backend: 'cpu', reason: `in a browser; the WebAssembly backend failed (${error instanceof Error ? error.message : String(error)})` };
  }
  await tfjs.setBackend('cpu');
  await tfjs.ready();
  return { backend: 'cpu', reason: `in a browser; the WebAssembly backend did not initialise from ${where}` };
}

const loaded = await load();
console.info(`[tensorbus] TensorFlow.js backend: ${loaded.backend} (${loaded.reason})`);

/** The TensorFlow.js namespace in use (tfjs on WASM or CPU). */
export const tf: Tf = tfjs;

/** The TensorFlow.js backend in use: `'wasm'` or `'cpu'` in a browser. */
export function tensorBackend(): TensorBackendName {
  return loaded.backend;
}

/** Why this backend was chosen, for logs and diagnostics. */
export function tensorBackendReason(): string {
  return loaded.reason;
}

/** As in Node (tf.ts): the variable a launcher sets once it said the backend; a page has no environment and reads none. */
export const BACKEND_SAID_ENV = 'TENSORBUS_BACKEND_SAID';
