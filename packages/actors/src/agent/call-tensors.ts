/**
 * The tensors a call makes, and their end with the call: PyTorch frees a
 * function's intermediates when nothing refers to them; TensorFlow.js frees
 * nothing unless told, and its `tf.tidy` cannot span an `await`. So each call
 * a worker serves collects the tensors made while it runs (by the function,
 * by the ops it runs, by the replies of calls it makes), following its async
 * chain with an AsyncSlot, and when the call ends every one of them is
 * disposed except:
 *
 * - what the call returns (sent first, then disposed as results always are),
 * - `tf.Variable`s, and tensors marked with `tf.keep()`,
 * - what a value kept by an RRef holds (the owner table keeps those: the
 *   fields of an instance a method or constructor stored them in),
 * - tensors a collection was handed on to (see {@link collectTensors}).
 *
 * It is TensorFlow.js's own rule for `tf.tidy`, applied across awaits. The
 * engine's `trackTensor` is hooked once per process; while no call collects,
 * the hook costs one integer comparison per tensor made.
 * @module
 */
import { AsyncSlot } from '../platform/async-scope.js';
import { tf } from '@tensorbus/core';
import { hookEngine, oncePerEngine } from '@tensorbus/core/internal';
import { forEachTensor } from '../tensors.js';

type Tensor = tf.Tensor;

/** Entries a collection holds before it first drops the tensors already disposed (see {@link CallTensors.add}). */
const FIRST_COMPACTION = 64;

/** The tensors one call (or one part of it) made, in the order made. */
export class CallTensors {
  /**
   * What the call made: a list, not a set (each tensor is counted once when
   * made; one counted again as a decoded reply is harmless, see close), with
   * the disposed ones dropped each time it doubles, so a long call that makes
   * and disposes many tensors holds only about twice its live ones.
   */
  private made: Tensor[] = [];
  private compactAt = FIRST_COMPACTION;
  private open = true;

  constructor() {
    install();
    collecting++;
  }

  /** Counts `tensor` as made by this call (no-op once closed: late timers of a finished call keep theirs). */
  add(tensor: Tensor): void {
    if (!this.open || tensor instanceof tf.Variable) return;
    if (this.made.push(tensor) < this.compactAt) return;
    this.made = this.made.filter((t) => !t.isDisposed);
    this.compactAt = Math.max(FIRST_COMPACTION, 2 * this.made.length);
  }

  /** @internal Entries held now (tests: about twice the live tensors at most, once past the first compaction). */
  get entries(): number {
    return this.made.length;
  }

  /** Runs `fn` so that the tensors it makes, across awaits, are this call's. */
  run<T>(fn: () => T): T {
    return scope.run(this, fn);
  }

  /** True when a tensor this call made is still alive (not disposed): one the call may have stored somewhere. */
  holdsLiveTensor(): boolean {
    for (const tensor of this.made) if (!tensor.isDisposed) return true;
    return false;
  }

  /** Stops collecting and hands the tensors made, still alive, to the caller (who now owns them). */
  handOver(): Tensor[] {
    const alive = [...new Set(this.made)].filter((tensor) => !tensor.isDisposed);
    this.stop();
    return alive;
  }

  /** Stops collecting and disposes what was made and nobody kept; returns how many it disposed. */
  close(): number {
    let disposed = 0;
    for (const tensor of this.made) {
      // A tensor listed twice is disposed at its first entry and skipped at its second.
      if (tensor.isDisposed || tensor.kept) continue;
      tensor.dispose();
      disposed++;
    }
    this.stop();
    return disposed;
  }

  private stop(): void {
    if (!this.open) return;
    this.open = false;
    this.made = [];
    collecting--;
  }
}

const scope = new AsyncSlot<CallTensors | undefined>();
const HOOKED = Symbol.for('tensorbus.callTensors.hooked');

/** Collections open in this process: the hook does nothing while it is 0. */
let collecting = 0;

function install(): void {
  // trackTensor runs once for each tensor made (ops, tf.tensor, clones, decoded tensors), never for re-tracking by tf.tidy.
  oncePerEngine(HOOKED, () => {
    hookEngine('trackTensor', (trackTensor) => (tensor, backend) => {
      trackTensor(tensor, backend);
      if (collecting > 0) scope.getStore()?.add(tensor);
    });
  });
}

/**
 * Runs `fn` in a collection of its own and returns its result with the
 * tensors it made; they are the caller's now (a constructor's tensors go to
 * the instance it made). For synchronous `fn` only.
 */
export function collectTensors<T>(fn: () => T): { result: T; made: Tensor[] } {
  const collection = new CallTensors();
  let result: T;
  try {
    result = collection.run(fn);
  } catch (error) {
    collection.close();
    throw error;
  }
  return { result, made: collection.handOver() };
}

/** Runs `fn` outside any call's collection (a transport may deliver a request in its sender's async scope). */
export function outsideCalls<T>(fn: () => T): T {
  // Already outside (a socket's callbacks, the usual case): what fn starts inherits no collection anyway.
  return scope.getStore() === undefined ? fn() : scope.run(undefined, fn);
}

/**
 * False only when the running call collects its tensors and every one it
 * made so far is disposed: then it cannot have stored a tensor it made
 * anywhere. True when it may have (or when no collection runs: unknown).
 */
export function currentCallMayHoldTensors(): boolean {
  return scope.getStore()?.holdsLiveTensor() ?? true;
}

/** Counts the tensors in `value` as made by the running call, if any (replies decoded where the running code cannot be seen). */
export function madeByCurrentCall(value: unknown): void {
  if (collecting === 0) return;
  const current = scope.getStore();
  if (current !== undefined) forEachTensor(value, (tensor) => current.add(tensor));
}
