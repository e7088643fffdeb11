/**
 * The span of a distributed backward pass: the gradients it sends to other
 * workers are calls made inside it, so their spans are its children.
 * @module
 */
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { observing } from './switch.js';
import { ATTR, codeOf, parentContext, parentScope, SCOPE } from './span-scope.js';

/** Runs `pass` (a backward pass of context `contextId` on `worker`) inside a span when tracing. */
export function observeBackward<T>(worker: string, contextId: string, pass: () => Promise<T>): Promise<T> {
  if (!observing.tracing) return pass();
  const parent = parentContext();
  const span = trace.getTracer(SCOPE).startSpan('autograd backward', { kind: SpanKind.INTERNAL, attributes: { [ATTR.worker]: worker, [ATTR.context]: contextId } }, parent);
  const scope = trace.setSpan(parent, span);
  return parentScope.run(scope, () => context.with(scope, pass)).then(
    (value) => {
      span.setAttribute(ATTR.outcome, 'OK');
      span.end();
      return value;
    },
    (error: unknown) => {
      span.setAttribute(ATTR.outcome, codeOf(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message.slice(0, 256) : 'ERROR' });
      span.end();
      throw error;
    },
  );
}
