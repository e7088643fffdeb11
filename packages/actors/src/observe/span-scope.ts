/**
 * The span calls made now are children of: the served call's, or the
 * backward pass's. Our own async scope, so that traces link up without an
 * OpenTelemetry context manager; the caller's active OpenTelemetry context
 * is the parent otherwise.
 * @module
 */
import { AsyncSlot } from '../platform/async-scope.js';
import { context, type Context } from '@opentelemetry/api';

/** The OpenTelemetry context of the span running now (set by served calls and backward passes). */
export const parentScope = new AsyncSlot<Context>();

/** The context a span started now is the child of. */
export function parentContext(): Context {
  return parentScope.getStore() ?? context.active();
}

/** Span attribute names (see docs/observability.md). */
export const ATTR = {
  worker: 'tensorbus.worker',
  peer: 'tensorbus.peer',
  function: 'rpc.method',
  system: 'rpc.system',
  route: 'tensorbus.route',
  sentBytes: 'tensorbus.sent_bytes',
  receivedBytes: 'tensorbus.received_bytes',
  outcome: 'tensorbus.outcome',
  verified: 'tensorbus.caller_verified',
  context: 'tensorbus.autograd.context',
} as const;

/** The instrumentation scope of tensorbus's spans and metrics. */
export const SCOPE = '@tensorbus/actors';

/** The code of a failure as the caller sees it: its TensorbusError code, or ERROR (a local failure without one). */
export function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.length <= 64 ? code : 'ERROR';
}
