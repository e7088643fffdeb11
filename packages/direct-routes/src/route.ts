/**
 * The one interface of the ways a request can travel (docs/data-plane.md,
 * "Routes"): shared memory between processes of one host
 * (`SharedMemoryRoute`, shm/shm-route.ts), a direct TCP route (`DirectRoute`,
 * direct/direct-route.ts) and the NATS bus (`BusRoute` of
 * @tensorbus/nats-transport). A transport keeps its routes in
 * order and one chooser (`RouteChoice` of @tensorbus/nats-transport) sends a
 * request on the first that carries its subject, and on the next when a route
 * did not deliver it. Types only: nothing here runs, so a browser build that
 * names them pulls no Node code.
 * @module
 */
import type { Frame, FrameSink, TransportRoute } from '@tensorbus/core';
import type { HeldPayload } from '@tensorbus/core/internal';

/** A request in flight as a route sees it: the route settles it, once. */
export interface RoutedRequest {
  /** Its full subject (namespace included). */
  readonly subject: string;
  /** True once settled (answered, failed, timed out or aborted). */
  readonly done: boolean;
  /** Settles it with its reply (the caller's frame). */
  resolve(reply: Frame): void;
  /** Settles it with an error. */
  reject(error: Error): void;
}

/** Where a large reply's bytes go as they arrive (RequestOptions.replySink), or undefined for a frame of their own. */
export type ReplySinkFactory = (byteLength: number) => FrameSink | undefined;

/**
 * What a route calls when it did not deliver a request (nothing reached the
 * responder, so it may be sent again): the chooser then sends it on the next
 * route. One function per chooser, made once, not one per call.
 */
export type Undelivered<Request extends RoutedRequest = RoutedRequest> = (from: Route<Request>, request: Request, data: HeldPayload, replySink: ReplySinkFactory | undefined) => void;

/** One way a request can travel; `Request` is what its transport sends (a transport's own pending request). */
export interface Route<Request extends RoutedRequest = RoutedRequest> {
  /** True when a request to `subject` (full) can go on this route now. */
  carries(subject: string): boolean;
  /** How a request to `subject` travels on this route ('nats', 'tcp' or 'shm'); asked when it carries it. */
  medium(subject: string): TransportRoute;
  /**
   * Sends `request`; its payload `data` stays held until it settles. The
   * route either settles it (its reply, or the error of a request that was
   * delivered and failed) or, when it did not deliver it, calls
   * `undelivered`: never both.
   */
  send(request: Request, data: HeldPayload, replySink: ReplySinkFactory | undefined, undelivered: Undelivered<Request>): void;
}
