/**
 * Every use tensorbus makes of TensorFlow.js internals, behind one typed face.
 *
 * The public tfjs API cannot (a) read a tensor's bytes without a copy, (b)
 * allocate a WASM tensor the receiver fills in place, (c) build a complex64
 * tensor on a backend without complex kernels, (d) record ops across awaits
 * for distributed autograd, or (e) see every tensor a call makes. Those need
 * the engine's and the backends' non-public members. They are reached here
 * and nowhere else, so that an upgrade of TensorFlow.js that moves one breaks
 * this module, whose test (`test/tf-internals.test.ts`) checks each assumption
 * below against the installed version and names the one that broke:
 *
 * 1. `engine.state.tensorInfo.get(dataId).backend` is the backend that holds a tensor's data;
 * 2. `engine.readSync(dataId)` returns a numeric tensor's values as its typed array;
 * 3. the WASM backend keeps data in `wasm.HEAPU8` at `dataIdMap.get(dataId).memoryOffset`,
 *    and `makeOutput(shape, dtype)` allocates it unwritten;
 * 4. `engine.makeTensorFromTensorInfo(info, backend)` wraps existing data in a tracked tensor;
 * 5. the CPU backend's `makeTensorInfo` / `disposeIntermediateTensorInfo` and its `Complex` kernel;
 * 6. the engine calls its own `isTapeOn`, `addTapeNode`, `saveTensorsForBackwardMode` and
 *    `trackTensor` through `this`, so replacing them on the instance hooks every op;
 * 7. `engine.state.gradientDepth` (> 0 inside `tf.grad`), `kernelDepth` (> 0 while a kernel
 *    runs) and `activeTape` (where `addTapeNode` pushes the node it builds);
 * 8. `engine.makeTensorFromDataId` plus `backend.incRef(dataId)` give a second tensor on the
 *    same data that keeps it alive on its own;
 * 9. `engine.clone(x)` copies a tensor as `saveTensorsForBackwardMode` does (Identity, plus a
 *    node on `tf.grad`'s tape).
 * @module
 */
import type * as TfNamespace from '@tensorflow/tfjs';
import { tf } from './tf.js';

type Tensor = TfNamespace.Tensor;
type TensorInfo = TfNamespace.TensorInfo;
type KernelBackend = TfNamespace.KernelBackend;

/** A node of TensorFlow.js's tape (tfjs-core `tape.ts`). */
export interface TapeNode {
  id: number;
  kernelName: string;
  inputs: Record<string, Tensor>;
  outputs: Tensor[];
  saved?: Tensor[];
  /** Absent when the op has no registered gradient. */
  gradient?: (dys: Array<Tensor | null>) => Record<string, () => Tensor>;
}

/** The engine methods tensorbus wraps, with the signatures tfjs-core 4.x calls them with. */
export interface EngineHooks {
  /** Whether the op about to run must save what its gradient needs and be recorded. */
  isTapeOn(): boolean;
  /** Builds the op's tape node (gradient lookup, zero-filled dys) and pushes it on `state.activeTape`. */
  addTapeNode(kernelName: string, inputs: unknown, outputs: Tensor[], gradientsFunc: unknown, saved: Tensor[], attrs: unknown): void;
  /** The tensors an op's gradient will read, as kept copies. */
  saveTensorsForBackwardMode(tensors: Tensor[]): Tensor[];
  /** Runs once for each tensor made (ops, `tf.tensor`, clones, decoded tensors). */
  trackTensor(tensor: Tensor, backend: unknown): void;
}

interface EngineState {
  activeTape: TapeNode[] | null;
  gradientDepth: number;
  kernelDepth: number;
  tensorInfo: { get(dataId: object): { backend?: unknown } | undefined };
}

interface DataBackend {
  incRef(dataId: object): void;
}

type InternalEngine = EngineHooks & {
  state: EngineState;
  readSync(dataId: object): unknown;
  makeTensorFromTensorInfo(info: TensorInfo, backend?: unknown): Tensor;
  makeTensorFromDataId(dataId: object, shape: number[], dtype: string, backend: unknown): Tensor;
  findBackend(name: string): unknown;
  clone(x: Tensor): Tensor;
};

/** The engine is one per process (tfjs keeps it global); `state` is read anew each time, as `engine.reset()` replaces it. */
const engine = tf.engine() as unknown as InternalEngine;

/** A TensorFlow.js internal this module relies on is not what it expects: this version of TensorFlow.js needs the adapter updated. */
function broken(assumption: string): Error {
  return new Error(`TensorFlow.js internals changed: ${assumption} no longer holds (packages/core/src/tf-internals.ts needs updating for this version)`);
}

// ---- 1, 2: where a tensor's data lives, and reading it --------------------------------

/** The backend that holds `tensor`'s data (tensors of one process can live on several); undefined if the engine does not know it. */
export function backendOfTensor(tensor: Tensor): unknown {
  return engine.state?.tensorInfo?.get(tensor.dataId)?.backend;
}

/** A tensor's values as its backend stores them (a typed array for numeric dtypes, byte strings for strings); no copy where the backend keeps one. */
export function readTensorSync(tensor: Tensor): unknown {
  return engine.readSync(tensor.dataId);
}

// ---- 3, 4: the WASM backend's heap ---------------------------------------------------

interface WasmBackendLike {
  dataIdMap: { get(dataId: object): { memoryOffset?: unknown } | undefined };
  wasm: { HEAPU8: Uint8Array };
  makeOutput(shape: number[], dtype: string): TensorInfo;
}

/** The WASM backend's members tensorbus uses. */
export interface WasmHeap {
  /** The backend itself, for {@link tensorFromInfo}. */
  readonly backend: unknown;
  /** The whole heap, as it is now (it may be replaced when it grows: take it again after any tfjs call). */
  heap(): Uint8Array;
  /** Where `dataId`'s bytes start in the heap; undefined when this backend does not hold it. */
  offsetOf(dataId: object): number | undefined;
  /** Allocates unwritten memory for a tensor of `shape` and `dtype` (the caller fills it): the backend's `makeOutput`. */
  allocate(shape: number[], dtype: string): TensorInfo;
}

const heaps = new WeakMap<object, WasmHeap>();

/** `backend` as a WASM heap, or undefined when it is another kind of backend. */
export function wasmHeapOf(backend: unknown): WasmHeap | undefined {
  const b = backend as Partial<WasmBackendLike> | undefined;
  if (typeof b?.dataIdMap?.get !== 'function' || !(b.wasm?.HEAPU8 instanceof Uint8Array) || typeof b.makeOutput !== 'function') return undefined;
  const wasm = b as WasmBackendLike;
  let face = heaps.get(wasm);
  if (face === undefined) {
    face = {
      backend: wasm,
      heap: () => wasm.wasm.HEAPU8,
      offsetOf: (dataId) => {
        const offset = wasm.dataIdMap.get(dataId)?.memoryOffset;
        return typeof offset === 'number' ? offset : undefined;
      },
      allocate: (shape, dtype) => wasm.makeOutput(shape, dtype),
    };
    heaps.set(wasm, face);
  }
  return face;
}

/** A tracked tensor wrapping data that `backend` already holds (`info` from the backend). */
export function tensorFromInfo(info: TensorInfo, backend: unknown): Tensor {
  return engine.makeTensorFromTensorInfo(info, backend as KernelBackend);
}

// ---- 5: complex64 on the CPU backend ----------------------------------------------------

interface CpuBackendLike {
  makeTensorInfo(shape: number[], dtype: string, values: Float32Array): TensorInfo;
  disposeIntermediateTensorInfo(info: TensorInfo): void;
}

/**
 * A complex64 tensor of `shape` made on the CPU backend from its real and
 * imaginary parts, whatever the active backend; undefined when the CPU
 * backend or its Complex kernel is not registered.
 */
export function complexOnCpu(real: Float32Array, imag: Float32Array, shape: number[]): Tensor | undefined {
  const cpu = engine.findBackend('cpu') as CpuBackendLike | null | undefined;
  const complexKernel = tf.getKernel('Complex', 'cpu');
  if (!cpu || !complexKernel) return undefined;
  if (typeof cpu.makeTensorInfo !== 'function' || typeof cpu.disposeIntermediateTensorInfo !== 'function') {
    throw broken('the CPU backend has makeTensorInfo and disposeIntermediateTensorInfo');
  }
  const realInfo = cpu.makeTensorInfo(shape, 'float32', real);
  const imagInfo = cpu.makeTensorInfo(shape, 'float32', imag);
  try {
    const info = complexKernel.kernelFunc({
      inputs: { real: realInfo, imag: imagInfo },
      backend: cpu as unknown as KernelBackend,
      attrs: {},
    }) as TensorInfo;
    return engine.makeTensorFromTensorInfo(info, cpu);
  } finally {
    cpu.disposeIntermediateTensorInfo(realInfo);
    cpu.disposeIntermediateTensorInfo(imagInfo);
  }
}

// ---- 6: hooking engine methods -----------------------------------------------------------

/**
 * Runs `install` the first time it is asked for `key` in this process: the
 * mark is kept on the engine, which is global, so two copies of a module
 * (two installed versions of a package) still hook the engine once.
 */
export function oncePerEngine(key: symbol, install: () => void): void {
  const marks = engine as unknown as Record<symbol, true | undefined>;
  if (marks[key]) return;
  marks[key] = true;
  install();
}

/**
 * Replaces the engine's method `name` with `wrap(original)`; `original` is
 * bound to the engine. Returns a function that puts the previous method back
 * (only while the hook is still the engine's method: hooks are undone in the
 * reverse order they were made).
 * @throws Error naming the assumption when the engine has no such method.
 */
export function hookEngine<K extends keyof EngineHooks>(name: K, wrap: (original: EngineHooks[K]) => EngineHooks[K]): () => void {
  const methods = engine as EngineHooks;
  const previous = methods[name];
  if (typeof previous !== 'function') throw broken(`the engine has a method ${name}`);
  const hook = wrap(previous.bind(engine) as EngineHooks[K]);
  methods[name] = hook;
  return () => {
    if (methods[name] === hook) methods[name] = previous;
  };
}

// ---- 7: the tape's state ---------------------------------------------------------------------

/** How many `tf.grad`-style gradient computations are recording now (> 0: tfjs's own tape is on). */
export function gradientDepth(): number {
  return engine.state.gradientDepth;
}

/** How many kernels are running now, one inside the other (> 0: an op runs inside another op). */
export function kernelDepth(): number {
  return engine.state.kernelDepth;
}

/** Runs `fn` as if inside a kernel: the engine does not record the ops it runs on any tape. */
export function asInnerKernel<T>(fn: () => T): T {
  engine.state.kernelDepth++;
  try {
    return fn();
  } finally {
    engine.state.kernelDepth--;
  }
}

/** Runs `fn` with `tape` as the engine's active tape (where `addTapeNode` pushes), then puts the previous one back. */
export function withActiveTape<T>(tape: TapeNode[], fn: () => T): T {
  const state = engine.state;
  const before = state.activeTape;
  state.activeTape = tape;
  try {
    return fn();
  } finally {
    state.activeTape = before;
  }
}

// ---- 8: sharing data -------------------------------------------------------------------------

/**
 * A kept tensor on the same data as `tensor` (no copy): the data is reference
 * counted, so it lives until both are disposed. TensorFlow.js never writes a
 * buffer in place (`Variable.assign` swaps buffers), so the share keeps the
 * value it had.
 */
export function shareTensorData(tensor: Tensor): Tensor {
  const backend = backendOfTensor(tensor) as DataBackend | undefined;
  if (typeof backend?.incRef !== 'function') throw broken('engine.state.tensorInfo gives the backend of a tensor, with incRef(dataId)');
  const shared = engine.makeTensorFromDataId(tensor.dataId, tensor.shape, tensor.dtype, backend);
  backend.incRef(tensor.dataId);
  return tf.keep(shared);
}

/**
 * A kept copy of `tensor`, made as the engine copies the tensors an op saves
 * for its gradient (`saveTensorsForBackwardMode`). Only while a `tf.grad`
 * records: the engine puts the copy on its tape.
 */
export function keptClone(tensor: Tensor): Tensor {
  return tf.keep(engine.clone(tensor));
}
