/**
 * `rref.backward()` [RRef.backward]: the distributed backward pass from the
 * scalar tensor an RRef holds, run on its owner within an autograd context.
 *
 * TensorFlow.js keeps no autograd graph on tensors (gradients come from
 * functions, `tf.grad`), so there is no "local autograd" backward as PyTorch
 * has without a context id: the graph is the one the context recorded, and
 * a context is required — the one given, or the one the calling code runs in.
 * The owner's side is `tb.rref.backward` in rref-functions.ts.
 * @module
 */
import { AutogradError, InvalidArgumentError, tf } from '@tensorbus/core';
import type { AgentHost, CallOptions } from '../agent/host.js';
import { AUTOGRAD } from '../autograd/autograd-key.js';
import type { RRef } from './rref.js';
import { BACKWARD_FN } from './rref-protocol.js';

/** The scalar float tensor an RRef's value must be to start a backward pass from. */
export function scalarRoot(value: unknown, rrefId: string): tf.Tensor {
  if (!(value instanceof tf.Tensor) || value.isDisposed) {
    throw new InvalidArgumentError(`backward() from RRef ${rrefId}: its value is not a tensor`);
  }
  if (value.size !== 1 || value.dtype !== 'float32') {
    throw new InvalidArgumentError(
      `backward() from RRef ${rrefId}: its value must be a scalar float32 tensor, got dtype ${value.dtype} and shape [${value.shape.join(', ')}]`,
    );
  }
  return value;
}

/**
 * The caller's side: picks the context, then runs the pass here when this
 * worker owns the value, or asks the owner (through `onOwner`, which turns an
 * owner's disappearance into RREF_OWNER_LOST).
 */
export async function rrefBackward(
  host: AgentHost,
  rref: RRef<unknown>,
  contextId: string | undefined,
  retainGraph: boolean,
  onOwner: (call: (rest: CallOptions) => Promise<unknown>) => Promise<unknown>,
): Promise<void> {
  const autograd = host.plugin(AUTOGRAD);
  const current = autograd.currentContextId();
  const id = contextId ?? current;
  if (id === undefined) {
    throw new AutogradError(
      'AUTOGRAD_CONTEXT_NOT_FOUND',
      'rref.backward() needs a distributed autograd context: call it inside agent.distAutograd.context() (TensorFlow.js keeps no graph on tensors, so there is no local backward outside one)',
    );
  }
  if (typeof id !== 'string') throw new InvalidArgumentError('rref.backward() contextId must be a context id (a string)');
  if (id !== current) {
    throw new AutogradError('AUTOGRAD_CONTEXT_NOT_FOUND', `rref.backward(${id}) must run inside that context's callback (the running code is in ${current ?? 'no context'})`);
  }
  if (rref.isOwner()) {
    await autograd.backward(id, [scalarRoot(await rref.toHere(), rref.rrefId)], { retainGraph });
    return;
  }
  const owner = rref.ownerName();
  // The call carries the context (it is made inside it): the owner's part of the context runs the pass.
  await onOwner((rest) => host.call(owner, BACKWARD_FN, [rref.rrefId, id, retainGraph], rest));
}
