/**
 * Spans of the RRef protocol's control messages (`rref.fork`, `rref.child`,
 * `rref.delete`; see rref/rref-protocol.ts): a PRODUCER span where one is
 * sent, its traceparent in the message's `tc` field, and a CONSUMER span
 * where it is handled, the child of the sender's (a bad `tc` is ignored, as
 * for calls). Other control kinds (pings, stream credit, shutdown status,
 * stats) are not traced: they are the machinery, not the user's references.
 * The control channel comes here only while tracing (observe/switch.ts).
 * @module
 */
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { ATTR, codeOf, parentContext, parentScope, SCOPE } from './span-scope.js';
import { formatTraceparent, parseTraceparent, TRACE_FIELD } from './trace-context.js';

/** The control kinds that are spans. */
export const isTracedKind = (kind: string): boolean => kind.startsWith('rref.');

/** The message to send for `message` from `self` to `to`: with a `tc` of a PRODUCER span (ended as it goes). */
export function traceSentControl<M extends { k: string }>(self: string, to: string, message: M): M {
  if (!isTracedKind(message.k)) return message;
  const span = trace.getTracer(SCOPE).startSpan(`ctl ${message.k}`, { kind: SpanKind.PRODUCER, attributes: { [ATTR.system]: 'tensorbus', [ATTR.worker]: self, [ATTR.peer]: to, [ATTR.function]: message.k } }, parentContext());
  const spanContext = span.spanContext();
  span.end();
  return trace.isSpanContextValid(spanContext) ? { ...message, [TRACE_FIELD]: formatTraceparent(spanContext) } : message;
}

/** Runs `handle` (the handler of a received control message) inside a CONSUMER span, continuing the sender's trace. */
export function traceHandledControl(self: string, message: { k: string; [field: string]: unknown }, from: string | undefined, handle: () => unknown): unknown {
  if (!isTracedKind(message.k)) return handle();
  const remote = parseTraceparent(message[TRACE_FIELD]);
  const parent = remote !== undefined ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT;
  const span = trace.getTracer(SCOPE).startSpan(`ctl ${message.k}`, { kind: SpanKind.CONSUMER, attributes: { [ATTR.system]: 'tensorbus', [ATTR.worker]: self, [ATTR.peer]: from ?? '', [ATTR.function]: message.k } }, parent);
  const scope = trace.setSpan(parent, span);
  const end = (code: string, error?: unknown) => {
    span.setAttribute(ATTR.outcome, code);
    if (code !== 'OK') span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message.slice(0, 256) : code });
    span.end();
  };
  try {
    const result = parentScope.run(scope, () => context.with(scope, handle));
    Promise.resolve(result).then(
      () => end('OK'),
      (error: unknown) => end(codeOf(error), error),
    );
    return result;
  } catch (error) {
    end(codeOf(error), error);
    throw error;
  }
}
