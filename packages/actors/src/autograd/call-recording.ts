/**
 * The forward half of the autograd protocol, as hooks of the worker's call
 * path: a call made inside a context carries its tag (`meta.ag`, protocol.ts);
 * the caller records the tensors it sends and those the reply brings; the
 * callee joins the context, records the tensors it received and those it
 * replies with. See docs/dist-autograd.md.
 * @module
 */
import { SerializationError, type tf } from '@tensorbus/core';
import type { CallMeta } from '../agent/call-context.js';
import type { AgentHost } from '../agent/host.js';
import { isWireId } from '../peer-limits.js';
import { randomIdPart } from '../random-id.js';
import { forEachTensor } from '../tensors.js';
import { differentiable, type AutogradContext } from './context.js';
import type { ContextTable } from './context-table.js';
import { META_KEY, replyId, tagOf, validCarriers } from './protocol.js';
import { recordingScope } from './tape.js';

/** The float tensors nested in `value` (the ones a gradient can flow through). */
function floatTensors(value: unknown): tf.Tensor[] {
  const found: tf.Tensor[] = [];
  forEachTensor(value, (tensor) => {
    if (differentiable(tensor)) found.push(tensor);
  });
  return found;
}

/** Installs the recording hooks of `contexts` into `host`'s call path. */
export function recordCalls(host: AgentHost, contexts: ContextTable): void {
  host.contributeMeta((meta) => tagCall(host, contexts, meta));
  host.tapCalls((to, args, meta) => onRequest(contexts, to, args, meta));
  host.wrapServing((meta, run, args, caller) => serve(contexts, meta, run, args, caller.verified));
}

/** Meta contributor: a call made inside a context carries it. */
function tagCall(host: AgentHost, contexts: ContextTable, meta: CallMeta): void {
  const context = contexts.current();
  if (context !== undefined) meta[META_KEY] = [context.id, `${host.name}.${randomIdPart()}`];
}

/** Caller side: records the tensors sent, and those the reply brings. */
function onRequest(contexts: ContextTable, to: string, args: unknown[], meta: CallMeta): ((value: unknown) => void) | undefined {
  const tag = meta[META_KEY] === undefined ? undefined : tagOf(meta);
  if (tag === undefined) return undefined;
  const context = contexts.get(tag[0]);
  if (context === undefined || !context.open) return undefined;
  const sent = floatTensors(args);
  context.addSend(tag[1], to, sent);
  const carriers = context.carriersAmong(sent);
  if (carriers !== undefined) meta[META_KEY] = [tag[0], tag[1], carriers];
  return (value) => {
    if (context.open) context.addRecv(to, replyId(tag[1]), floatTensors(value));
  };
}

/**
 * Callee side: joins the caller's context, records the tensors received and
 * those replied. A caller that did not show it is the member it names takes
 * part in no context here (it could otherwise pin or feed another's).
 */
function serve(contexts: ContextTable, meta: CallMeta, run: () => Promise<unknown>, args: unknown[], verified: boolean): Promise<unknown> {
  const tag = meta[META_KEY] === undefined || !verified ? undefined : tagOf(meta);
  // In-process transports deliver in the sender's async scope: a call outside any context must not inherit one.
  if (tag === undefined) return recordingScope.getStore() === undefined ? run() : recordingScope.exit(run);
  if (!isWireId(tag[0]) || !isWireId(tag[1])) return Promise.reject(new SerializationError('malformed autograd context id in a call'));
  let context: AutogradContext | undefined;
  const received = floatTensors(args);
  const carriers = tag[2];
  if (carriers !== undefined && !validCarriers(carriers, received.length)) return Promise.reject(new SerializationError('malformed autograd gradient carriers in a call'));
  const existed = contexts.has(tag[0]);
  try {
    context = contexts.join(tag[0], meta.from);
    if (context !== undefined) contexts.ledger.charge(context, meta.from, received);
  } catch (error) {
    // A refused call keeps nothing: not even the context it would have opened.
    if (context !== undefined && !existed) contexts.drop(context);
    return Promise.reject(error);
  }
  if (context === undefined) return recordingScope.exit(run);
  context.addRecv(meta.from, tag[1], received, carriers);
  return recordingScope.run(context, run).then((result) => {
    if (context.open) context.addSend(replyId(tag[1]), meta.from, floatTensors(result));
    return result;
  });
}
