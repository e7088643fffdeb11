/**
 * Observed calls: the client span and the server span of each call, its
 * counts in the worker's rings and in the metrics. The call path comes here
 * only while `observing.on` (switch.ts); otherwise none of this runs.
 *
 * Parents: a call made while serving a traced call (or inside a traced
 * backward pass) is that span's child, found through {@link parentScope}
 * (our own async scope, so no OpenTelemetry context manager is needed); else
 * the caller's active OpenTelemetry context. The callee continues the trace
 * from the W3C traceparent in the call's meta (`tc`), checked as hostile
 * input (trace-context.ts).
 * @module
 */
import { context, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { reportsRoutes, TensorbusError, type InboundMessage, type Payload, type Transport } from '@tensorbus/core';
import type { CallMeta } from '../agent/call-context.js';
import type { AgentHost } from '../agent/host.js';
import { callSubject } from '../agent/subjects.js';
import { meterCall } from './instruments.js';
import { ATTR, codeOf, parentContext, parentScope, SCOPE } from './span-scope.js';
import { observing } from './switch.js';
import { formatTraceparent, parseTraceparent, TRACE_FIELD } from './trace-context.js';
import { observationsOf } from './worker-observations.js';

/** The code a callee's failure reaches the caller with: a TensorbusError's own, REMOTE_ERROR for any other (see remoteErrorFrom). */
function servedCodeOf(error: unknown): string {
  return error instanceof TensorbusError ? codeOf(error) : 'REMOTE_ERROR';
}

/** Where a call to `to` goes on `transport`: in-process, shared memory, TCP or NATS. */
function routeTo(transport: Transport, to: string): string {
  try {
    return reportsRoutes(transport) ? transport.routeOf(callSubject(to)) : transport.kind ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The bytes of a call each way, filled in by the call client as it sends and as the reply arrives. */
export interface CallBytes {
  sent: number;
  received: number;
}

/**
 * Makes the call `send` performs an observed one: a client span (its
 * traceparent put into `meta` before `send` encodes it), and its counts.
 */
export function observeCall(host: AgentHost | undefined, self: string, to: string, fn: string, meta: CallMeta, transport: Transport, send: (bytes: CallBytes) => Promise<unknown>): Promise<unknown> {
  const route = routeTo(transport, to);
  const startedAt = performance.now();
  let span: Span | undefined;
  if (observing.tracing) {
    span = trace.getTracer(SCOPE).startSpan(
      `rpc ${fn}`,
      { kind: SpanKind.CLIENT, attributes: { [ATTR.system]: 'tensorbus', [ATTR.worker]: self, [ATTR.peer]: to, [ATTR.function]: fn, [ATTR.route]: route } },
      parentContext(),
    );
    const spanContext = span.spanContext();
    if (trace.isSpanContextValid(spanContext)) meta[TRACE_FIELD] = formatTraceparent(spanContext);
  }
  const bytes: CallBytes = { sent: 0, received: 0 };
  const end = (code: string, error?: unknown) => {
    const ms = performance.now() - startedAt;
    const observations = observationsOf(host);
    if (observations !== undefined) {
      observations.made.record(fn, ms, code !== 'OK');
      observations.routed(to, route);
      if (code !== 'OK') observations.failed(code);
    }
    if (observing.metering) meterCall('client', self, fn, code, ms, bytes.sent, bytes.received);
    if (span !== undefined) {
      span.setAttributes({ [ATTR.sentBytes]: bytes.sent, [ATTR.receivedBytes]: bytes.received, [ATTR.outcome]: code });
      if (code !== 'OK') span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message.slice(0, 256) : code });
      span.end();
    }
  };
  return send(bytes).then(
    (value) => {
      end('OK');
      return value;
    },
    (error: unknown) => {
      end(codeOf(error), error);
      throw error;
    },
  );
}

/** The serving of one observed call: `run` wraps the function's run, `answered` is told the reply as it goes out. */
export interface ObservedServe {
  run: () => Promise<unknown>;
  answered: (reply: Payload) => void;
}

/**
 * Makes the serving of one call an observed one: a server span continuing
 * the caller's trace, active while the function runs (its own calls are its
 * children) and ended once the reply is sent, with the bytes each way.
 */
export function observeServe(host: AgentHost, fn: string, meta: CallMeta, verified: boolean, message: InboundMessage, run: () => Promise<unknown>): ObservedServe {
  let startedAt = 0;
  const received = (message.payload ?? message.data).byteLength;
  let span: Span | undefined;
  let code = 'OK';
  let reason: unknown;
  return {
    run: () => {
      startedAt = performance.now();
      let scope = ROOT_CONTEXT;
      if (observing.tracing) {
        const remote = parseTraceparent(meta[TRACE_FIELD]);
        const parent = remote !== undefined ? trace.setSpanContext(ROOT_CONTEXT, remote) : ROOT_CONTEXT;
        span = trace.getTracer(SCOPE).startSpan(
          `rpc ${fn}`,
          {
            kind: SpanKind.SERVER,
            attributes: { [ATTR.system]: 'tensorbus', [ATTR.worker]: host.name, [ATTR.peer]: meta.from, [ATTR.function]: fn, [ATTR.receivedBytes]: received, [ATTR.verified]: verified, [ATTR.route]: routeOfInbound(host, message) },
          },
          parent,
        );
        scope = trace.setSpan(parent, span);
      }
      const running = span === undefined ? run() : parentScope.run(scope, () => context.with(scope, run));
      return running.catch((error: unknown) => {
        code = servedCodeOf(error);
        reason = error;
        throw error;
      });
    },
    // The span ends once the reply (result or error) is sent: its size is known then.
    answered: (reply) => {
      const ms = performance.now() - startedAt;
      const sent = reply.byteLength;
      const observations = observationsOf(host);
      if (observations !== undefined) {
        observations.served.record(fn, ms, code !== 'OK');
        if (code !== 'OK') observations.failed(code);
      }
      if (observing.metering) meterCall('server', host.name, fn, code, ms, sent, received);
      if (span !== undefined) {
        span.setAttributes({ [ATTR.sentBytes]: sent, [ATTR.outcome]: code });
        if (code !== 'OK') span.setStatus({ code: SpanStatusCode.ERROR, message: reason instanceof Error ? reason.message.slice(0, 256) : code });
        span.end();
      }
    },
  };
}

/** The route a served request came on, as far as the callee can tell. */
function routeOfInbound(host: AgentHost, message: InboundMessage): string {
  if (host.transport.kind === 'local') return 'in-process';
  return message.reply === 'direct' ? 'direct' : 'nats';
}
