/**
 * Serving one HTTP request: path and method, Host, Origin and Content-Type,
 * credentials, the body within its size and time, the client's requests in
 * flight, the call (cancelled if the client goes away), the response, one
 * log line. Whatever a request holds, nothing it sends makes this throw: every
 * failure becomes an HTTP refusal (wrong path or method, credentials) or an
 * XML-RPC fault.
 * @module
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { tf } from '@tensorbus/core';
import { GatewayError } from './errors.js';
import { forEachTensor } from '@tensorbus/actors/internal';
import type { Authenticator, Principal } from './auth.js';
import { readBody } from './body.js';
import { BODY_RETRY_AFTER_S, BodiesBusyError, type BodyBudget } from './body-budget.js';
import { faultOf } from './faults.js';
import type { HandleTable } from './handles.js';
import type { IdentityAgents } from './identities.js';
import type { Listings } from './listings.js';
import { readMethodCall } from './method-call.js';
import { dispatch, type RequestContext } from './methods.js';
import type { ResolvedGatewayOptions } from './options.js';
import { formatRecord, type RequestRecord } from './request-log.js';
import { refusalOf } from './request-guards.js';
import { RequestBudget } from './values-in.js';
import { faultXml, forEachRRef, responseXml } from './values-out.js';
import type { RRef } from '@tensorbus/actors/internal';

/** Paths that take calls: `/RPC2` (Python's default) and `/`. */
const PATHS = new Set(['/RPC2', '/']);

/** The parts of a running gateway a request uses. */
export interface GatewayParts {
  options: ResolvedGatewayOptions;
  auth: Authenticator;
  agents: IdentityAgents;
  handles: HandleTable;
  listings: Listings;
  /** Requests in flight by client. */
  inFlight: Map<string, number>;
  /** Bytes of request bodies held until they are parsed, in all and per address. */
  bodies: BodyBudget;
}

function refuse(response: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', connection: 'close', ...headers });
  response.end(`${text}\n`);
}

function reply(response: ServerResponse, xml: string): void {
  response.writeHead(200, { 'content-type': 'text/xml; charset=utf-8', 'content-length': String(Buffer.byteLength(xml)) });
  response.end(xml);
}

/** Serves `request`. */
export async function serve(parts: GatewayParts, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const started = performance.now();
  const record: RequestRecord = { client: `address:${request.socket.remoteAddress ?? '?'}`, method: '-', worker: undefined, ms: 0, outcome: 'ok', retries: 0 };
  const path = (request.url ?? '').split('?')[0]!;
  try {
    if (!PATHS.has(path)) {
      record.outcome = 'refused 404';
      return refuse(response, 404, 'XML-RPC calls are POSTed to /RPC2');
    }
    if (request.method !== 'POST') {
      record.outcome = 'refused 405';
      return refuse(response, 405, 'XML-RPC calls are POSTed to /RPC2', { allow: 'POST' });
    }
    const refusal = refusalOf(request, parts.options.host, !parts.auth.required, parts.options.tls ? 'https' : 'http');
    if (refusal !== undefined) {
      record.outcome = `refused ${refusal.status}`;
      return refuse(response, refusal.status, refusal.why);
    }
    let principal: Principal;
    try {
      principal = await parts.auth.authenticate(request);
    } catch (error) {
      record.outcome = 'refused 401';
      const challenge = 'Basic realm="tensorbus", Bearer realm="tensorbus"';
      return refuse(response, 401, error instanceof GatewayError ? error.message : 'unauthorized', { 'www-authenticate': challenge });
    }
    record.client = principal.client;
    await serveCall(parts, principal, request, response, record);
  } catch (error) {
    // A bug of the gateway, not of the request: the request still gets an answer.
    if (!response.headersSent) replyFault(response, record, error);
  } finally {
    record.ms = performance.now() - started;
    parts.options.logger?.info(formatRecord(record));
  }
}

/**
 * Takes one of `client`'s in-flight slots; GATEWAY_LIMIT_EXCEEDED when it has
 * none left, or the gateway serves `maxClients` already. Resolves with what
 * gives the slot back (once, however often it is called).
 */
function takeSlot(parts: GatewayParts, client: string): () => void {
  const { limits } = parts.options;
  const count = parts.inFlight.get(client) ?? 0;
  if (count >= limits.maxInFlightPerClient) {
    throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `this client has ${limits.maxInFlightPerClient} requests in flight already: wait for their answers`);
  }
  if (count === 0 && parts.inFlight.size >= limits.maxClients) {
    throw new GatewayError('GATEWAY_LIMIT_EXCEEDED', `the gateway serves ${limits.maxClients} clients at once already: try again shortly`);
  }
  parts.inFlight.set(client, count + 1);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    const left = (parts.inFlight.get(client) ?? 1) - 1;
    if (left > 0) parts.inFlight.set(client, left);
    else parts.inFlight.delete(client);
    // Idle time counts from the end of a client's last request.
    parts.handles.touch(client);
  };
}

async function serveCall(parts: GatewayParts, principal: Principal, request: IncomingMessage, response: ServerResponse, record: RequestRecord): Promise<void> {
  const { limits } = parts.options;
  const { client } = principal;
  // A request's arrival is activity too: the client is not idle while its body is read, before it takes a slot.
  parts.handles.touch(client);
  const budget = new RequestBudget(limits);
  const retries = { count: 0 };
  // A client that goes away before its answer (its connection closed) cancels its calls and frees its slot at once.
  const gone = new AbortController();
  const onClose = () => {
    if (!response.writableFinished) gone.abort();
  };
  response.once('close', onClose);
  let giveBack: (() => void) | undefined;
  let result: unknown;
  const bodyHold = parts.bodies.hold(request.socket.remoteAddress ?? '?');
  try {
    // The body first, within its size, time and the budget of bodies in flight: a slow or abandoned body holds no slot.
    let body: Buffer;
    try {
      body = await readBody(request, limits.maxBodyBytes, limits.bodyTimeoutMs, bodyHold);
    } catch (error) {
      response.setHeader('connection', 'close');
      if (!(error instanceof BodiesBusyError)) throw error;
      record.outcome = 'refused 503 (bodies in flight)';
      return refuse(response, 503, error.message, { 'retry-after': String(BODY_RETRY_AFTER_S) });
    }
    let call;
    try {
      call = readMethodCall(body, budget);
    } finally {
      // Parsed (or refused): its bytes are no longer the gateway's to hold.
      bodyHold.release();
    }
    record.method = call.methodName;
    if (gone.signal.aborted) throw gone.signal.reason;
    giveBack = takeSlot(parts, client);
    gone.signal.addEventListener('abort', giveBack, { once: true });
    const ctx: RequestContext = {
      agent: parts.agents.get(principal.identity),
      client,
      handles: parts.handles,
      listings: parts.listings,
      own: parts.agents,
      budget,
      timeoutMs: parts.options.callTimeoutMs,
      signal: gone.signal,
      retry: parts.options.retry,
      retries,
      innerFaults: 0,
    };
    try {
      result = await dispatch(call.methodName, call.params, ctx);
    } finally {
      record.worker = ctx.worker;
    }
    if (gone.signal.aborted) throw gone.signal.reason;
    const adopted = new Map<RRef<unknown>, string>();
    let xml: string;
    try {
      xml = responseXml(result, {
        allowNil: parts.options.allowNil,
        maxDepth: limits.maxDepth,
        handleOf: (rref) => {
          const handle = parts.handles.adopt(client, principal.identity, rref);
          adopted.set(rref, handle);
          return handle;
        },
      }, limits.maxResultBytes);
    } catch (error) {
      // The client never sees these handles, nor the RRefs past the value that failed: let every reference go now.
      forEachRRef(result, (rref) => {
        const handle = adopted.get(rref);
        const released = handle === undefined ? rref.release() : parts.handles.release(client, handle);
        void released.catch(() => undefined);
      });
      throw error;
    }
    record.outcome = ctx.innerFaults > 0 ? `ok (${ctx.innerFaults} of the multicall faulted)` : 'ok';
    reply(response, xml);
  } catch (error) {
    if (!gone.signal.aborted) replyFault(response, record, error);
    else {
      record.outcome = 'abandoned (the client went away; its calls were cancelled)';
      // Nobody takes what came back: its RRefs are let go.
      forEachRRef(result, (rref) => void rref.release().catch(() => undefined));
    }
  } finally {
    bodyHold.release();
    response.off('close', onClose);
    giveBack?.();
    record.retries = retries.count;
    // The tensors made from the arguments, and those that arrived in the result, are the gateway's: gone with the request.
    tf.dispose(budget.tensors);
    forEachTensor(result, (tensor) => tensor.dispose());
  }
}

/** Answers with the fault `error` makes (naming the worker the request reached, if any) and logs it as the outcome. */
function replyFault(response: ServerResponse, record: RequestRecord, error: unknown): void {
  const fault = faultOf(error, record.worker);
  record.outcome = `fault ${fault.faultCode} ${fault.code}${fault.detail === undefined ? '' : ` ${JSON.stringify(fault.detail)}`}`;
  reply(response, faultXml(fault));
}
