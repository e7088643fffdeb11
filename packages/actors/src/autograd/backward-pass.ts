/**
 * The local part of a distributed backward pass: from seed gradients (the
 * roots, or the gradients a peer sent for tensors this worker sent it), walk
 * the context's recorded ops in reverse, as tfjs-core's `backpropagateGradients`
 * does for `tf.grad`, and collect what reaches the leaves: gradients of this
 * worker's variables, and gradients of received tensors, to send back to the
 * workers they came from [FAST mode: one local pass per incoming message].
 * @module
 */
import { tf } from '@tensorbus/core';
import { isLeaf, type AutogradContext, type RecvRecord } from './context.js';
import { withoutRecording } from './tape.js';

type Tensor = tf.Tensor;

/** What one local pass produced; the caller owns every tensor in it. */
export interface PassResult {
  /** Gradients of this worker's trainable variables. */
  leaves: Map<tf.Variable, Tensor>;
  /** Gradients of received tensors, per message, aligned with the record's tensors. */
  outgoing: Map<RecvRecord, Array<Tensor | null>>;
}

/**
 * Runs the reverse pass of `context` from `seeds` ([tensor, its gradient]).
 * Synchronous: nothing else runs in between, so concurrent passes of one or
 * several contexts never interleave. Seeds are not consumed.
 * @throws Error when an op on the way has no gradient or gives a wrong one.
 */
export function localPass(context: AutogradContext, seeds: Array<[Tensor, Tensor]>): PassResult {
  return withoutRecording(() => {
    const leaves = new Map<tf.Variable, Tensor>();
    const outgoing = new Map<RecvRecord, Array<Tensor | null>>();
    // Everything made in here is disposed but the gradients handed out (returned, so tidy keeps them).
    tf.tidy(() => {
      const grads = new Map<number, Tensor>();
      const variables = new Map<number, tf.Variable>();
      const add = (id: number, grad: Tensor) => {
        const previous = grads.get(id);
        grads.set(id, previous === undefined ? grad : tf.add(previous, grad));
      };
      for (const [tensor, grad] of seeds) {
        checkGradient(grad, tensor, 'seed');
        add(tensor.id, grad.clone());
        if (isLeaf(tensor)) variables.set(tensor.id, tensor);
      }
      for (let i = context.nodes.length - 1; i >= 0; i--) {
        const { node, wrt } = context.nodes[i]!;
        let reached = false;
        const dys = node.outputs.map((output) => {
          const dy = grads.get(output.id);
          if (dy !== undefined) reached = true;
          return dy ?? null;
        });
        if (!reached) continue;
        if (node.gradient === undefined) {
          throw new Error(`cannot compute the gradient of op '${node.kernelName}': TensorFlow.js registers no gradient for it`);
        }
        const inputGradients = node.gradient(dys);
        for (const name of wrt) {
          const gradientOf = inputGradients[name];
          if (gradientOf === undefined) throw new Error(`op '${node.kernelName}' gives no gradient for its input '${name}'`);
          const input = node.inputs[name]!;
          const dx = tf.tidy(gradientOf);
          checkGradient(dx, input, `op '${node.kernelName}'`);
          add(input.id, dx);
          if (isLeaf(input)) variables.set(input.id, input);
        }
      }
      const result: Tensor[] = [];
      for (const [id, variable] of variables) {
        const grad = grads.get(id);
        if (grad === undefined) continue;
        leaves.set(variable, grad);
        result.push(grad);
      }
      for (const [id, grad] of grads) {
        const slot = context.recvs.get(id);
        if (slot === undefined) continue;
        let row = outgoing.get(slot.record);
        if (row === undefined) outgoing.set(slot.record, (row = slot.record.tensors.map(() => null)));
        row[slot.index] = grad;
        result.push(grad);
      }
      return result;
    });
    return { leaves, outgoing };
  });
}

function checkGradient(grad: Tensor, of: Tensor, where: string): void {
  if (grad.dtype !== 'float32') throw new Error(`${where} gives a gradient of dtype '${grad.dtype}'; gradients must be float32`);
  if (grad.shape.length !== of.shape.length || grad.shape.some((d, i) => d !== of.shape[i])) {
    throw new Error(`${where} gives a gradient of shape [${grad.shape}] for a tensor of shape [${of.shape}]`);
  }
}
