/**
 * The W3C trace context a call carries (`traceparent`, in the call meta's
 * `tc` field and in control messages' `tc`). It comes from another process:
 * it is taken only as a string of exactly the W3C form, with non-zero ids,
 * and ignored otherwise (a bad one never fails the call).
 * @module
 */
import { isSpanContextValid, TraceFlags, type SpanContext } from '@opentelemetry/api';

/** The meta / control message field carrying the trace context. */
export const TRACE_FIELD = 'tc';

/** `version-traceid-spanid-flags`, version 00 (the only one defined), lower-case hex. */
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** Length of a version-00 traceparent. */
const TRACEPARENT_LENGTH = 55;

/** The traceparent of `context`. */
export function formatTraceparent(context: SpanContext): string {
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0');
  return `00-${context.traceId}-${context.spanId}-${flags}`;
}

/**
 * The remote span context `value` names, or undefined when it is not a
 * well-formed traceparent (checked for length before the pattern runs).
 */
export function parseTraceparent(value: unknown): SpanContext | undefined {
  if (typeof value !== 'string' || value.length !== TRACEPARENT_LENGTH) return undefined;
  const match = TRACEPARENT.exec(value);
  if (match === null) return undefined;
  const context: SpanContext = {
    traceId: match[1]!,
    spanId: match[2]!,
    traceFlags: parseInt(match[3]!, 16) & TraceFlags.SAMPLED,
    isRemote: true,
  };
  // All-zero ids are invalid by the spec.
  return isSpanContextValid(context) ? context : undefined;
}
