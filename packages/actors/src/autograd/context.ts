/**
 * One worker's part of a distributed autograd context [DistAutogradContext]:
 * the ops recorded in it, the tensors it sent and received by RPC (the send
 * and recv functions of PyTorch's design), the workers it talked to, and the
 * gradients accumulated for this worker's variables.
 * @module
 */
import { tf } from '@tensorbus/core';
import type { Recorder, TapeNode } from './tape.js';

type Tensor = tf.Tensor;

/** A recorded op, with the inputs a gradient can flow into. */
export interface RecordedNode {
  node: TapeNode;
  /** Names of the inputs that depend on a differentiable source. */
  wrt: string[];
}

/** Tensors this worker sent in one message of the context [SendRpcBackward]. */
export interface SendRecord {
  peer: string;
  tensors: Tensor[];
}

/** Tensors this worker received in one message of the context [RecvRpcBackward]. */
export interface RecvRecord {
  peer: string;
  /** The id under which the peer recorded the send. */
  msgId: string;
  tensors: Tensor[];
}

/** Where a received tensor sits. */
export interface RecvSlot {
  record: RecvRecord;
  index: number;
}

/** True when `tensor` can carry a gradient (TensorFlow.js differentiates float32 only). */
export function differentiable(tensor: Tensor): boolean {
  return tensor.dtype === 'float32';
}

/** True when `tensor` is a leaf whose gradient is kept: a trainable float32 variable. */
export function isLeaf(tensor: Tensor): tensor is tf.Variable {
  return tensor instanceof tf.Variable && tensor.trainable && tensor.dtype === 'float32';
}

/** One worker's state of one context. */
export class AutogradContext implements Recorder {
  open = true;
  /** Ops recorded in this context, in execution order. */
  readonly nodes: RecordedNode[] = [];
  /** Ids of tensors that depend on a received tensor or a variable (outputs of recorded ops, received tensors). */
  readonly tracked = new Set<number>();
  /** Tensors sent, by message id. */
  readonly sends = new Map<string, SendRecord>();
  /** Received tensors, by tensor id. */
  readonly recvs = new Map<number, RecvSlot>();
  /** Workers this context talked to: they hold a part of it. */
  readonly known = new Set<string>();
  /** Gradients accumulated for this worker's variables. */
  readonly grads = new Map<tf.Variable, Tensor>();
  /** Set by a backward without retainGraph started here. */
  graphUsed = false;
  /** The peer whose call opened this context here (undefined for a context opened by `context()`). */
  openedBy: string | undefined;
  /** Bytes of received tensors kept by this context, per sending peer (counted against its bound). */
  readonly charges = new Map<string, number>();
  /** Last time a call or a gradient of this context arrived (Date.now()), for leases. */
  lastUsed = Date.now();

  constructor(
    readonly id: string,
    /** The agent this context belongs to (recording scopes are shared by every agent of a process). */
    readonly home: object,
  ) {}

  record(node: TapeNode): boolean {
    let wrt: string[] | undefined;
    for (const name in node.inputs) {
      const input = node.inputs[name];
      if (input instanceof tf.Tensor && differentiable(input) && (this.tracked.has(input.id) || isLeaf(input))) (wrt ??= []).push(name);
    }
    if (wrt === undefined) return false;
    this.nodes.push({ node, wrt });
    for (const output of node.outputs) if (differentiable(output)) this.tracked.add(output.id);
    return true;
  }

  /** Records tensors sent to `peer` in message `msgId`. */
  addSend(msgId: string, peer: string, tensors: Tensor[]): void {
    this.known.add(peer);
    if (tensors.length > 0) this.sends.set(msgId, { peer, tensors });
  }

  /**
   * Records tensors received from `peer`, sent there as message `msgId`; with
   * `carriers`, only the tensors at those positions can take a gradient back
   * (the others do not depend on anything the sender differentiates).
   */
  addRecv(peer: string, msgId: string, tensors: Tensor[], carriers?: number[]): void {
    this.known.add(peer);
    if (tensors.length === 0 || carriers?.length === 0) return;
    const record: RecvRecord = { peer, msgId, tensors };
    const carrying = carriers === undefined ? undefined : new Set(carriers);
    tensors.forEach((tensor, index) => {
      if (carrying !== undefined && !carrying.has(index)) return;
      // The same tensor twice in one message is one tensor here: its gradient goes to the first slot.
      if (this.recvs.has(tensor.id)) return;
      this.recvs.set(tensor.id, { record, index });
      this.tracked.add(tensor.id);
    });
  }

  /** The positions, among `tensors` about to be sent, of those a gradient can flow back through; undefined when all can. */
  carriersAmong(tensors: Tensor[]): number[] | undefined {
    const carriers: number[] = [];
    tensors.forEach((tensor, index) => {
      if (isLeaf(tensor) || this.tracked.has(tensor.id)) carriers.push(index);
    });
    return carriers.length === tensors.length ? undefined : carriers;
  }

  /** Adds `grad` to the gradient of `variable` (taking ownership of `grad`). */
  accumulate(variable: tf.Variable, grad: Tensor): void {
    const previous = this.grads.get(variable);
    // Kept: the context owns its gradients until released, even when a call that ran the backward ends first.
    if (previous === undefined) {
      this.grads.set(variable, tf.keep(grad));
      return;
    }
    this.grads.set(variable, tf.keep(tf.add(previous, grad)));
    previous.dispose();
    grad.dispose();
  }

  /** Drops everything: saved tensors of the recorded ops and accumulated gradients are disposed. */
  release(): void {
    this.open = false;
    for (const { node } of this.nodes) for (const tensor of node.saved ?? []) tensor.dispose();
    for (const grad of this.grads.values()) grad.dispose();
    this.nodes.length = 0;
    this.tracked.clear();
    this.sends.clear();
    this.recvs.clear();
    this.grads.clear();
  }
}
