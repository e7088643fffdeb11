/**
 * The distributed autograd protocol's messages. See docs/dist-autograd.md.
 *
 * Forward (on every call made inside a context, in the call's metadata):
 *   meta.ag = [contextId, msgId, carriers?]
 *                                     the caller records a send `msgId` (tensors in args)
 *                                     and, on the reply, a recv `msgId~` (tensors in the value);
 *                                     the callee joins the context, records a recv `msgId`
 *                                     (only the tensors listed in `carriers`, when given),
 *                                     runs the function in the context, records a send `msgId~`
 *
 * Backward and cleanup (calls, through the agent's registry, outside any context):
 *   tb.autograd.grads(contextId, msgId, grads[])  gradients for the tensors of send `msgId`;
 *                                                 resolves once every pass it causes is done
 *   tb.autograd.release(contextId)                drop the context here and on the workers it knows
 * @module
 */
import type { tf } from '@tensorbus/core';

/** The metadata key of a call made inside a context. */
export const META_KEY = 'ag';

/**
 * The metadata of a call made inside a context: [contextId, msgId], and, when
 * not every float32 tensor of the call can carry a gradient back, the indices
 * of those that can (among the call's float32 tensors, in the order the codec
 * walks them): a trainable variable, or a tensor computed from one or from a
 * tensor received in the context. PyTorch attaches its send/recv functions
 * only to tensors that require grad; so the callee keeps no gradient path to
 * an input batch, and a backward does not send its gradient back for nothing.
 */
export type AutogradTag = [contextId: string, msgId: string, carriers?: number[]];

/** Remote function names of the protocol. */
export const GRADS = 'tb.autograd.grads';
export const RELEASE = 'tb.autograd.release';
/** The remote functions the autograd plugin declares (it has no control kinds: everything rides on calls). */
export const AUTOGRAD_FUNCTIONS = [GRADS, RELEASE] as const;

/**
 * A call of the backward and cleanup half, as its callee handles it: one kind
 * per remote function, its arguments named (autograd-functions.ts makes them,
 * `DistAutograd.handle` dispatches them). Their values come from the wire and
 * are checked where they are used.
 */
export type AutogradMessage =
  /** Gradients for the tensors of send `msgId`; `timeoutMs`: what is left of the backward's time, if it has a limit. */
  | { kind: typeof GRADS; contextId: string; msgId: string; grads: Array<tf.Tensor | null>; timeoutMs?: number }
  /** Drop the context here and on the workers it knows (but the caller). */
  | { kind: typeof RELEASE; contextId: string };

/** The id of the send made by a reply to message `msgId`. */
export function replyId(msgId: string): string {
  return `${msgId}~`;
}

/** The tag of `meta`, if it carries a well-formed one. */
export function tagOf(meta: Record<string, unknown>): AutogradTag | undefined {
  const tag = meta[META_KEY];
  if (!Array.isArray(tag) || (tag.length !== 2 && tag.length !== 3) || typeof tag[0] !== 'string' || typeof tag[1] !== 'string') return undefined;
  return tag as AutogradTag;
}

/** True when `carriers` (from the wire) lists distinct positions among `count` tensors, in increasing order. */
export function validCarriers(carriers: unknown, count: number): carriers is number[] {
  if (!Array.isArray(carriers) || carriers.length > count) return false;
  let last = -1;
  for (const index of carriers) {
    if (!Number.isInteger(index) || (index as number) <= last || (index as number) >= count) return false;
    last = index as number;
  }
  return true;
}

/** The worker that created context `contextId` (ids are `<worker>/<instance>.<n>`). */
export function creatorOf(contextId: string): string {
  const slash = contextId.indexOf('/');
  return slash < 0 ? '' : contextId.slice(0, slash);
}
