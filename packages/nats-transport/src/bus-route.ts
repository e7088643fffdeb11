/**
 * The NATS bus as a {@link Route}: it carries every subject, so it is the
 * last of a transport's routes and the one a request falls back to. Sending
 * is the transport's (a small request as it is, a large one announced and
 * fetched or pulled in chunks; see NatsTransport); the reply comes back on
 * the transport's inbox and settles the request there.
 * @module
 */
import type { HeldPayload } from '@tensorbus/core/internal';
import type { Route } from '@tensorbus/direct-routes';
import type { PendingRequest } from './request/pending-request.js';

/** Requests published on the bus. */
export class BusRoute implements Route<PendingRequest> {
  /** @param publish publishes a request on the bus, settling it with the error if that fails */
  constructor(private readonly publish: (request: PendingRequest, data: HeldPayload) => void) {}

  carries(): boolean {
    return true;
  }

  medium(): 'nats' {
    return 'nats';
  }

  send(request: PendingRequest, data: HeldPayload): void {
    this.publish(request, data);
  }
}
