/**
 * `rref.backward()` [RRef.backward]: the distributed backward pass from the
 * scalar tensor an RRef holds, run on its owner within an autograd context.
 *
 * TensorFlow.js keeps no autograd graph on tensors (gradients come from
 * functions, `tf.grad`), so there is no "local autograd" backward as PyTorch
 * has without a context id: the graph is the one the context recorded, and
 * a context is required — the one given, or the one the calling code runs in.
 * @module
 */
import { AutogradError, InvalidArgumentError, tf } from '@tensorbus/core';
import { callScope } from '../agent/call-context.js';
import type { RpcAgent } from '../agent/rpc-agent.js';
import type { CallOptions } from '../agent/call-client.js';
import { remoteFunction } from '../registry/functions.js';
import type { RRef } from './rref.js';
import { entryOf, manager, valueOf } from './rref-functions.js';

/** The scalar float tensor an RRef's value must be to start a backward pass from. */
function scalarRoot(value: unknown, rrefId: string): tf.Tensor {
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

/** Runs the pass on this worker (the owner) from `value`. */
async function backwardHere(agent: RpcAgent, value: unknown, rrefId: string, contextId: string, retainGraph: boolean): Promise<void> {
  await agent.distAutograd.backward(contextId, [scalarRoot(value, rrefId)], { retainGraph });
}

/** The owner's side: the call must carry the context it names (a caller cannot reach into a context it is not in). */
export const backwardFromValue = remoteFunction('tb.rref.backward', async (rrefId: unknown, contextId: unknown, retainGraph: unknown): Promise<null> => {
  const scope = callScope.getStore();
  const agent = scope?.agent as RpcAgent | undefined;
  if (!agent) throw new AutogradError('AUTOGRAD_CONTEXT_NOT_FOUND', 'rref backward runs only inside calls to an agent');
  if (typeof contextId !== 'string' || agent.distAutograd.currentContextId() !== contextId) {
    throw new AutogradError('AUTOGRAD_CONTEXT_NOT_FOUND', `rref backward: this call does not belong to autograd context ${String(contextId).slice(0, 64)} on '${agent.self.name}'`);
  }
  const entry = entryOf(manager(), rrefId);
  await backwardHere(agent, await valueOf(entry), entry.rrefId, contextId, retainGraph === true);
  return null;
});

/**
 * The caller's side: picks the context, then runs the pass here when this
 * worker owns the value, or asks the owner (through `onOwner`, which turns an
 * owner's disappearance into RREF_OWNER_LOST).
 */
export async function rrefBackward(
  agent: RpcAgent,
  rref: RRef<unknown>,
  contextId: string | undefined,
  retainGraph: boolean,
  onOwner: (call: (rest: CallOptions) => Promise<unknown>) => Promise<unknown>,
): Promise<void> {
  const current = agent.distAutograd.currentContextId();
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
    await backwardHere(agent, await rref.toHere(), rref.rrefId, id, retainGraph);
    return;
  }
  const owner = rref.ownerName();
  // The call carries the context (it is made inside it): the owner's part of the context runs the pass.
  await onOwner((rest) => agent.calls.call(owner, backwardFromValue.remoteName, [rref.rrefId, id, retainGraph], agent.meta(owner), rest));
}
