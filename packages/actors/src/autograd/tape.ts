/**
 * Records TensorFlow.js ops into distributed autograd contexts.
 *
 * TensorFlow.js in eager mode keeps no graph: its engine appends a node
 * (inputs, outputs, saved tensors, a `gradient(dys)` closure) to a tape only
 * while `tf.grad` runs, synchronously. A distributed context spans awaits, so
 * this module hooks three methods of the engine instance, once per process:
 *
 * - `isTapeOn()` also answers true while the running code is inside an open
 *   context (found through AsyncLocalStorage, so it follows awaits, timers and
 *   the remote calls a context makes), so ops save what their gradients need;
 * - `saveTensorsForBackwardMode()` then shares the saved buffers (reference
 *   counted) instead of copying them;
 * - `addTapeNode()` hands such a node to that context instead of the engine's
 *   own tape. The context keeps it only if it depends on something that can
 *   carry a gradient (a trainable variable, a tensor received by RPC, or the
 *   output of a node it kept); otherwise its saved tensors are disposed at once.
 *
 * A `tf.grad` running inside a context keeps working: its tape gets the node
 * too, with its own copies of the saved tensors. When no context is open in
 * the process, the hooks cost one integer comparison per op.
 * @module
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { tf } from '@tensorbus/core';

type Tensor = tf.Tensor;

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

/** Where recorded nodes go: an open autograd context. */
export interface Recorder {
  /** False once released: nothing is recorded any more. */
  readonly open: boolean;
  /** Keeps `node` if it depends on a differentiable source; returns whether it did. */
  record(node: TapeNode): boolean;
}

/** The context the running code belongs to (set by `context()` and by calls that carry one). */
export const recordingScope = new AsyncLocalStorage<Recorder>();

interface EngineState {
  activeTape: TapeNode[] | null;
  gradientDepth: number;
  kernelDepth: number;
  tensorInfo: { get(dataId: object): { backend: Backend } | undefined };
}

interface Backend {
  incRef(dataId: object): void;
}

type AddTapeNode = (kernelName: string, inputs: unknown, outputs: Tensor[], gradientsFunc: unknown, saved: Tensor[], attrs: unknown) => void;

interface HookableEngine {
  state: EngineState;
  isTapeOn(): boolean;
  addTapeNode: AddTapeNode;
  saveTensorsForBackwardMode(tensors: Tensor[]): Tensor[];
  makeTensorFromDataId(dataId: object, shape: number[], dtype: string, backend: Backend): Tensor;
  clone(x: Tensor): Tensor;
  keep<T extends Tensor>(x: T): T;
}

const HOOKED = Symbol.for('tensorbus.autograd.hooked');

/** Contexts open in this process (all agents). The hooks do nothing while it is 0. */
let openContexts = 0;
/** Above 0 while tensorbus itself runs ops that must not be recorded (backward passes). */
let suspended = 0;

function activeRecorder(): Recorder | undefined {
  const recorder = recordingScope.getStore();
  return recorder !== undefined && recorder.open ? recorder : undefined;
}

function install(): void {
  const engine = tf.engine() as unknown as HookableEngine & { [HOOKED]?: true };
  if (engine[HOOKED]) return;
  engine[HOOKED] = true;
  const isTapeOn = engine.isTapeOn;
  const addTapeNode = engine.addTapeNode;
  const saveTensorsForBackwardMode = engine.saveTensorsForBackwardMode;

  engine.isTapeOn = function (this: HookableEngine): boolean {
    if (isTapeOn.call(this)) return true;
    return openContexts > 0 && suspended === 0 && this.state.kernelDepth === 0 && activeRecorder() !== undefined;
  };

  engine.saveTensorsForBackwardMode = function (this: HookableEngine, tensors: Tensor[]): Tensor[] {
    // Tape on for contexts only: share the buffers instead of copying them (the WASM backend's
    // clone copies). TensorFlow.js never writes a buffer in place (Variable.assign swaps
    // buffers), so a shared buffer still holds the value the op saw when backward runs.
    if (this.state.gradientDepth > 0 || openContexts === 0 || suspended > 0 || activeRecorder() === undefined) {
      return saveTensorsForBackwardMode.call(this, tensors);
    }
    return tensors.map((tensor) => {
      const backend = this.state.tensorInfo.get(tensor.dataId)!.backend;
      const shared = this.makeTensorFromDataId(tensor.dataId, tensor.shape, tensor.dtype, backend);
      backend.incRef(tensor.dataId);
      return this.keep(shared);
    });
  };

  engine.addTapeNode = function (this: HookableEngine, kernelName, inputs, outputs, gradientsFunc, saved, attrs): void {
    const recorder = openContexts > 0 && suspended === 0 && this.state.kernelDepth === 0 ? activeRecorder() : undefined;
    const userTape = this.state.gradientDepth > 0;
    if (recorder === undefined) {
      if (userTape) {
        addTapeNode.call(this, kernelName, inputs, outputs, gradientsFunc, saved, attrs);
      } else {
        // The tape was on only for contexts (e.g. a clone made while saving): nobody will use these.
        for (const tensor of saved) tensor.dispose();
      }
      return;
    }
    // A tf.grad running inside the context disposes its own tape's saved tensors: give the context copies.
    const mine = userTape ? copies(this, saved) : saved;
    const scratch: TapeNode[] = [];
    const tape = this.state.activeTape;
    this.state.activeTape = scratch;
    try {
      // The engine builds the node (gradient lookup, zero-filled dys) as it does for tf.grad.
      addTapeNode.call(this, kernelName, inputs, outputs, gradientsFunc, mine, attrs);
    } finally {
      this.state.activeTape = tape;
    }
    const kept = scratch[0] !== undefined && recorder.record(scratch[0]);
    if (!kept) for (const tensor of mine) tensor.dispose();
    if (userTape) addTapeNode.call(this, kernelName, inputs, outputs, gradientsFunc, saved, attrs);
  };
}

/** Kept clones of `tensors`, made without recording anything. */
function copies(engine: HookableEngine, tensors: Tensor[]): Tensor[] {
  suspended++;
  engine.state.kernelDepth++;
  try {
    return tensors.map((tensor) => engine.keep(engine.clone(tensor)));
  } finally {
    engine.state.kernelDepth--;
    suspended--;
  }
}

/** A context opened in this process: turns the hooks on (installing them the first time). */
export function contextOpened(): void {
  install();
  openContexts++;
}

/** A context of this process was released. */
export function contextClosed(): void {
  openContexts = Math.max(0, openContexts - 1);
}

/** Runs `fn` without recording its ops in any context (backward passes, optimizer steps). */
export function withoutRecording<T>(fn: () => T): T {
  suspended++;
  try {
    return fn();
  } finally {
    suspended--;
  }
}

/** Contexts open in this process (for tests and diagnostics). */
export function openContextCount(): number {
  return openContexts;
}
