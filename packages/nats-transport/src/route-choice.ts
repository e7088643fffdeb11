/**
 * The one place that chooses how a request travels (docs/data-plane.md,
 * "Which route a call takes"): a transport's routes in order of preference
 * (with a data port: shared memory, where the addon is, then TCP; the bus
 * last), each a {@link Route} of @tensorbus/direct-routes. A request goes on
 * the first route that carries its subject; a route that did not deliver it hands it back
 * here and it goes on the next one that does, the bus in the end, which
 * carries every subject. A request settled meanwhile (timed out, aborted) is
 * not sent again.
 * @module
 */
import type { TransportRoute } from '@tensorbus/core';
import type { HeldPayload } from '@tensorbus/core/internal';
import type { ReplySinkFactory, Route, RoutedRequest, Undelivered } from '@tensorbus/direct-routes';

/** Chooses, among a transport's routes, the one a request takes, and the next when it was not delivered. */
export class RouteChoice<Request extends RoutedRequest> {
  private readonly last: Route<Request>;

  /** Hands a request a route did not deliver to the next route that carries it (made once: no function per call). */
  private readonly undelivered: Undelivered<Request> = (from, request, data, replySink) => {
    if (request.done) return;
    this.next(from, request.subject).send(request, data, replySink, this.undelivered);
  };

  /** @param routes in order of preference; the last one (the bus) carries every subject. */
  constructor(private readonly routes: readonly Route<Request>[]) {
    this.last = routes[routes.length - 1]!;
  }

  /** The route a request to `subject` (full) takes now: the first that carries it. */
  choose(subject: string): Route<Request> {
    const routes = this.routes;
    for (let i = 0; i < routes.length - 1; i++) if (routes[i]!.carries(subject)) return routes[i]!;
    return this.last;
  }

  /** Sends `request` on the route {@link choose} gives; `data` stays held until it settles. */
  send(request: Request, data: HeldPayload, replySink: ReplySinkFactory | undefined): void {
    this.choose(request.subject).send(request, data, replySink, this.undelivered);
  }

  /** How a request to `subject` (full) travels now. */
  mediumOf(subject: string): TransportRoute {
    return this.choose(subject).medium(subject);
  }

  /** The first route after `from` that carries `subject`, else the last. */
  private next(from: Route<Request>, subject: string): Route<Request> {
    const routes = this.routes;
    for (let i = routes.indexOf(from) + 1; i < routes.length - 1; i++) if (routes[i]!.carries(subject)) return routes[i]!;
    return this.last;
  }
}
