/**
 * The TCP route as a {@link Route}: a request to a subject whose responder
 * offered a route ({@link LearntRoutes}) goes over a pooled connection to
 * its data port, its bytes inline, or pulled by the responder when large
 * ({@link DirectCaller}). A route that did not deliver a request (NO ROUTE,
 * or no connection) is forgotten and the request handed back to the chooser
 * (the bus finds the responder, if there is one). Between processes of one
 * host the shared-memory route comes first (../shm/shm-route.ts) and hands
 * here what it does not carry in a segment. See docs/data-plane.md.
 * @module
 */
import type { Frame } from '@tensorbus/core';
import type { HeldPayload } from '@tensorbus/core/internal';
import type { ReplySinkFactory, Route, RoutedRequest, Undelivered } from '../route.js';
import { RouteUnavailableError, type DirectCaller } from './direct-caller.js';
import type { LearntRoutes } from './learnt-routes.js';

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
