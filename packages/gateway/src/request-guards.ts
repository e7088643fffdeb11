/**
 * What a request's headers must say before the gateway reads its body: a
 * browser must not be able to make the gateway run anything. Without auth the
 * Host header must name this server (a loopback name or the address it
 * listens on), so a DNS-rebound page is refused, as the dashboard refuses
 * it; an Origin header, which browsers send and XML-RPC clients do not, must
 * be the gateway's own origin; and the body must be declared `text/xml`,
 * which a page of another origin cannot send without the CORS preflight the
 * gateway never grants.
 * @module
 */
import type { IncomingMessage } from 'node:http';

/** Host names of this machine's loopback interface. */
const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** A refusal: the HTTP status and why. */
export interface Refusal {
  status: 403 | 415;
  why: string;
}

/** The host name of a Host header value (`name:port`, `[v6]:port`), lower case; undefined when malformed. */
function hostName(header: string): string | undefined {
  if (header.length === 0 || header.length > 300) return undefined;
  if (header.startsWith('[')) {
    const end = header.indexOf(']');
    return end < 0 ? undefined : header.slice(0, end + 1).toLowerCase();
  }
  return header.split(':')[0]!.toLowerCase();
}

/**
 * Why `request` is refused before anything else is done for it, or undefined.
 * @param listenHost - the address the gateway listens on.
 * @param checkHost - true without auth: the Host header must name this server.
 * @param scheme - `http` or `https`, for the gateway's own origin.
 */
export function refusalOf(request: IncomingMessage, listenHost: string, checkHost: boolean, scheme: 'http' | 'https'): Refusal | undefined {
  const host = request.headers.host;
  const name = typeof host === 'string' ? hostName(host) : undefined;
  if (name === undefined) return { status: 403, why: 'the request has no valid Host header' };
  if (checkHost && !LOOPBACK_NAMES.has(name) && name !== listenHost.toLowerCase()) {
    return { status: 403, why: `Host ${JSON.stringify(host!.slice(0, 80))} is not this gateway: without auth it answers only to its loopback names` };
  }
  const origin = request.headers.origin;
  if (origin !== undefined && origin.toLowerCase() !== `${scheme}://${host!.toLowerCase()}`) {
    return { status: 403, why: `requests from the web page of origin ${JSON.stringify(origin.slice(0, 80))} are refused` };
  }
  const type = request.headers['content-type'];
  if (typeof type !== 'string' || type.split(';')[0]!.trim().toLowerCase() !== 'text/xml') {
    return { status: 415, why: 'XML-RPC calls are sent as Content-Type: text/xml' };
  }
  return undefined;
}
