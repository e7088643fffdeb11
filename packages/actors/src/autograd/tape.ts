/**
 * Records TensorFlow.js ops into distributed autograd contexts.
 *
 * TensorFlow.js in eager mode keeps no graph: its engine appends a node
 * (inputs, outputs, saved tensors, a `gradient(dys)` closure) to a tape only
 * while `tf.grad` runs, synchronously. A distributed context spans awaits, so
 * this module hooks three methods of the engine instance, once per process:
 *
 * - `isTapeOn()` also answers true while the running code is inside an open
 *   context (found through an AsyncSlot, so it follows awaits, timers and
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
import { AsyncSlot } from '../platform/async-scope.js';
import { tf } from '@tensorbus/core';
import { asInnerKernel, gradientDepth, hookEngine, keptClone, kernelDepth, oncePerEngine, shareTensorData, withActiveTape, type TapeNode } from '@tensorbus/core/internal';

type Tensor = tf.Tensor;

export type { TapeNode };

/** Where recorded nodes go: an open autograd context. */
export interface Recorder {
  /** False once released: nothing is recorded any more. */
  readonly open: boolean;
  /** Keeps `node` if it depends on a differentiable source; returns whether it did. */
  record(node: TapeNode): boolean;
}

/** The context the running code belongs to (set by `context()` and by calls that carry one). */
export const recordingScope = new AsyncSlot<Recorder>();

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
  oncePerEngine(HOOKED, hookTape);
}

function hookTape(): void {
  hookEngine('isTapeOn', (isTapeOn) => () => {
    if (isTapeOn()) return true;
    return openContexts > 0 && suspended === 0 && kernelDepth() === 0 && activeRecorder() !== undefined;
  });

  hookEngine('saveTensorsForBackwardMode', (saveTensorsForBackwardMode) => (tensors) => {
    // Tape on for contexts only: share the buffers instead of copying them (the WASM backend's
    // clone copies). TensorFlow.js never writes a buffer in place (Variable.assign swaps
    // buffers), so a shared buffer still holds the value the op saw when backward runs.
    if (gradientDepth() > 0 || openContexts === 0 || suspended > 0 || activeRecorder() === undefined) {
      return saveTensorsForBackwardMode(tensors);
    }
    return tensors.map(shareTensorData);
  });

  hookEngine('addTapeNode', (addTapeNode) => (kernelName, inputs, outputs, gradientsFunc, saved, attrs) => {
    const recorder = openContexts > 0 && suspended === 0 && kernelDepth() === 0 ? activeRecorder() : undefined;
    const userTape = gradientDepth() > 0;
    if (recorder === undefined) {
      if (userTape) {
        addTapeNode(kernelName, inputs, outputs, gradientsFunc, saved, attrs);
      } else {
        // The tape was on only for contexts (e.g. a clone made while saving): nobody will use these.
        for (const tensor of saved) tensor.dispose();
      }
      return;
    }
    // A tf.grad running inside the context disposes its own tape's saved tensors: give the context copies.
    const mine = userTape ? copies(saved) : saved;
    const scratch: TapeNode[] = [];
    // The engine builds the node (gradient lookup, zero-filled dys) as it does for tf.grad.
    withActiveTape(scratch, () => addTapeNode(kernelName, inputs, outputs, gradientsFunc, mine, attrs));
    const kept = scratch[0] !== undefined && recorder.record(scratch[0]);
    if (!kept) for (const tensor of mine) tensor.dispose();
    if (userTape) addTapeNode(kernelName, inputs, outputs, gradientsFunc, saved, attrs);
  });
}

/** Kept clones of `tensors`, made without recording anything. */
function copies(tensors: Tensor[]): Tensor[] {
  suspended++;
  try {
    return asInnerKernel(() => tensors.map(keptClone));
  } finally {
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
