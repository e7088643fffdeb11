/**
 * The direct TCP route as a {@link Route}: the routes this transport learnt
 * from replies' tb-route headers, by full subject, and the sending of a
 * request on one. Shared memory is a placement on it, decided per call by
 * {@link DirectCaller} (a frame that fits a segment, a peer of this host that
 * can map it; otherwise its bytes on the same connection), so `medium` says
 * 'shm' or 'tcp'. A route that did not deliver a request is forgotten and
 * the request handed back to the chooser (the bus finds the responder, if
 * there is one). See docs/data-plane.md, "How a route is learnt".
 * @module
 */
import type { Frame, Payload } from '@tensorbus/core';
import type { HeldPayload } from '@tensorbus/core/internal';
import type { ReplySinkFactory, Route, RoutedRequest, Undelivered } from '../route.js';
import { RouteUnavailableError, type DirectCaller } from './direct-caller.js';
import { parseOffer, type DirectOffer } from './direct-protocol.js';

/** Requests to subjects whose responder offered a route, sent on it. */
export class DirectRoute implements Route {
  /** Routes learnt from replies, by full subject. */
  private readonly routes = new Map<string, DirectOffer>();

  /**
   * @param caller sends requests over data-port connections
   * @param allowed false for an endpoint this transport may not use (under TLS, anything but loopback)
   */
  constructor(
    private readonly caller: DirectCaller,
    private readonly allowed: (endpoint: DirectOffer) => boolean,
  ) {}

  /** Remembers the route a reply's tb-route header offers for later requests to `subject`. */
  learn(subject: string, header: string | undefined): void {
    if (this.routes.has(subject)) return;
    const route = parseOffer(header);
    if (route && this.allowed(route) && this.caller.usable(route)) this.routes.set(subject, route);
  }

  carries(subject: string): boolean {
    return this.routes.has(subject);
  }

  medium(subject: string): 'shm' | 'tcp' | 'nats' {
    const route = this.routes.get(subject);
    return route === undefined ? 'nats' : this.caller.medium(route);
  }

  /** Sends `request` on its learnt route (any transport's request type: the route only settles it). */
  send<Request extends RoutedRequest>(request: Request, data: HeldPayload, replySink: ReplySinkFactory | undefined, undelivered: Undelivered<Request>): void {
    this.request(request.subject, data, replySink).then(
      (answer) => (answer === undefined ? undelivered(this, request, data, replySink) : request.resolve(answer)),
      (error: Error) => request.reject(error),
    );
  }

  /**
   * Sends a request on the route learnt for `subject`. Resolves undefined when
   * there is none, or it did not deliver the request (the route is then
   * forgotten). Rejects when it was delivered and failed. A large reply may
   * go into a sink `replySink` gives (see RequestOptions). `data` must stay
   * held until the promise settles; the reply is the caller's.
   */
  async request(subject: string, data: Payload, replySink?: ReplySinkFactory): Promise<Frame | undefined> {
    const route = this.routes.get(subject);
    if (!route) return undefined;
    try {
      return await this.caller.call(route, subject, data, replySink);
    } catch (error) {
      if (!(error instanceof RouteUnavailableError)) throw error;
      if (this.routes.get(subject) === route) this.routes.delete(subject);
      return undefined;
    }
  }

  /** Forgets every route (the transport closes). */
  clear(): void {
    this.routes.clear();
  }
}
