/**
 * The callee side of the autograd protocol, registered like any remote
 * function and called through the ordinary call path (so timeouts and failure
 * detection apply: a dead participant fails a backward at once). Each turns
 * its arguments into an {@link AutogradMessage} for `DistAutograd.handle`.
 * @module
 */
import type { tf } from '@tensorbus/core';
import { servingPlugin } from '../agent/host.js';
import { remoteFunction } from '../registry/functions.js';
import { AUTOGRAD } from './autograd-key.js';
import { GRADS, RELEASE, type AutogradMessage } from './protocol.js';

/** Hands `message` to the distributed autograd of the worker serving the current call, with its caller. */
async function handle(message: AutogradMessage): Promise<null> {
  const { plugin, scope } = servingPlugin(AUTOGRAD, 'an autograd protocol function');
  await plugin.handle(message, scope.caller, scope.verified);
  return null;
}

/** Gradients for the tensors this worker sent as message `msgId`: runs the passes they cause. */
export const receiveGradients = remoteFunction(GRADS, (contextId: string, msgId: string, grads: Array<tf.Tensor | null>, timeoutMs?: number) =>
  // The passes it runs hand their gradients to contexts, which dispose them when released.
  handle({ kind: GRADS, contextId, msgId, grads, timeoutMs }),
{ tidy: false });

/** Releases a context here and on the workers it knows (but the caller). */
export const releaseContext = remoteFunction(RELEASE, (contextId: string) => handle({ kind: RELEASE, contextId }), { tidy: false });
