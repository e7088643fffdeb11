/**
 * The callee side of the autograd protocol, registered like any remote
 * function and called through the ordinary call path (so timeouts and failure
 * detection apply: a dead participant fails a backward at once).
 * @module
 */
import type { tf } from '@tensorbus/core';
import { servingPlugin } from '../agent/host.js';
import { remoteFunction } from '../registry/functions.js';
import type { DistAutograd } from './dist-autograd.js';
import { AUTOGRAD } from './autograd-key.js';
import { GRADS, RELEASE } from './protocol.js';

/** The distributed autograd of the worker serving the current call, and the caller. */
function serving(): { autograd: DistAutograd; caller: string; verified: boolean } {
  const { plugin, scope } = servingPlugin(AUTOGRAD, 'an autograd protocol function');
  return { autograd: plugin, caller: scope.caller, verified: scope.verified };
}

/** Gradients for the tensors this worker sent as message `msgId`: runs the passes they cause. */
export const receiveGradients = remoteFunction(GRADS, async (contextId: string, msgId: string, grads: Array<tf.Tensor | null>, timeoutMs?: number): Promise<null> => {
  const { autograd, caller, verified } = serving();
  // What is left of the backward's time, if the caller set one: the passes this causes share it.
  const deadline = typeof timeoutMs === 'number' && Number.isFinite(timeoutMs) && timeoutMs > 0 ? Date.now() + Math.min(timeoutMs, 2 ** 31 - 1) : undefined;
  await autograd.receiveGradients(contextId, msgId, grads, caller, verified, deadline);
  return null;
  // The passes it runs hand their gradients to contexts, which dispose them when released.
}, { tidy: false });

/** Releases a context here and on the workers it knows (but the caller). */
export const releaseContext = remoteFunction(RELEASE, async (contextId: string): Promise<null> => {
  const { autograd, caller, verified } = serving();
  await autograd.releaseFrom(contextId, caller, verified);
  return null;
}, { tidy: false });
