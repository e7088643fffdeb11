/**
 * The TCP route as a {@link Route}, and the routes it takes: those a
 * transport learnt from replies' tb-route headers ({@link LearntRoutes}),
 * one table that the shared-memory route (../shm/shm-route.ts) reads too,
 * since both travel to the same data port ("How a route is learnt" in
 * docs/data-plane.md). A request to a subject with a learnt route goes over
 * a pooled connection to its data port, its bytes inline, or pulled by the
 * responder when large ({@link DirectCaller}). A route that did not deliver
 * a request (NO ROUTE, or no connection) is forgotten and the request
 * handed back to the chooser (the bus finds the responder, if there is
 * one). Between processes of one host the shared-memory route comes first
 * and hands here what no segment holds, and what its responder refused to
 * map. See docs/data-plane.md, "Which route a call takes".
 * @module
 */
import type { Frame } from '@tensorbus/core';
import type { HeldPayload } from '@tensorbus/core/internal';
import type { ReplySinkFactory, Route, RoutedRequest, Undelivered } from '../route.js';
import { RouteUnavailableError, type DirectCaller } from './direct-caller.js';
import { parseOffer, type DirectOffer } from './direct-protocol.js';

/** Routes learnt from replies, by full subject, until one fails to deliver a request. */
export class LearntRoutes {
  /** Each subject's route (its responder's data port and the token naming the route there). */
  readonly bySubject = new Map<string, DirectOffer>();

  /** @param usable false for an endpoint this transport may not or cannot use (under TLS, anything but loopback; a loopback of another host) */
  constructor(private readonly usable: (route: DirectOffer) => boolean) {}

  /** Remembers the route a reply's tb-route header offers for later requests to `subject`; a malformed or unusable one is ignored. */
  learn(subject: string, header: string | undefined): void {
    if (this.bySubject.has(subject)) return;
    const route = parseOffer(header);
    if (route && this.usable(route)) this.bySubject.set(subject, route);
  }

  /** The route learnt for `subject`, if any. */
  get(subject: string): DirectOffer | undefined {
    return this.bySubject.get(subject);
  }

  /** Forgets the route of `subject` if it is still `route` (it did not deliver a request: removed, stale, or its port is gone). */
  forget(subject: string, route: DirectOffer): void {
    if (this.bySubject.get(subject) === route) this.bySubject.delete(subject);
  }

  /** Forgets every route (the transport closes). */
  clear(): void {
    this.bySubject.clear();
  }
}

/** Requests to subjects whose responder offered a route, sent over TCP. */
export class DirectRoute implements Route {
  /**
   * @param routes the routes learnt from replies (shared with the shared-memory route)
   * @param caller sends requests over data-port connections
   */
  constructor(
    private readonly routes: LearntRoutes,
    private readonly caller: DirectCaller,
  ) {}

  carries(subject: string): boolean {
    return this.routes.bySubject.has(subject);
  }

  medium(): 'tcp' {
    return 'tcp';
  }

  /** Sends `request` on its learnt route (any transport's request type: the route only settles it). */
  send<Request extends RoutedRequest>(request: Request, data: HeldPayload, replySink: ReplySinkFactory | undefined, undelivered: Undelivered<Request>): void {
    const subject = request.subject;
    const route = this.routes.get(subject);
    if (route === undefined) return undelivered(this, request, data, replySink);
    this.caller.call(route, subject, data, replySink).then(
      (reply: Frame) => request.resolve(reply),
      (error: Error) => {
        if (!(error instanceof RouteUnavailableError)) return request.reject(error);
        this.routes.forget(subject, route);
        undelivered(this, request, data, replySink);
      },
    );
  }
}
