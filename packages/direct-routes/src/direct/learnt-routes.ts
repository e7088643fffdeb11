/**
 * The direct routes a transport learnt from replies' tb-route headers, by
 * full subject: one table that both routes beside the bus read (shared
 * memory, ../shm/shm-route.ts, and TCP, direct-route.ts), since both travel
 * to the same data port. See docs/data-plane.md, "How a route is learnt".
 * @module
 */
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
