/**
 * The tensorbus `Transport` on NATS (the class; Node's `natsTransport()` that
 * connects it is in node-connect.ts, the browser's in browser.ts): request/reply through one multiplexed
 * inbox, publish, subscribe, status, and chunked transfers of payloads beyond
 * the server's `max_payload`. Small messages go out as they are, with no
 * header and no copy; large ones are fetched by the receiver over the direct
 * data plane (TCP between the two processes) where it can reach the sender,
 * else pulled in chunks through NATS. Requests to a subject one subscriber
 * serves alone (a worker's calls) go on a route beside the bus once a reply
 * named it (@tensorbus/direct-routes: shared memory on one host, else TCP).
 * Pending requests live in request/ (a table by token, each settled once);
 * which route a request takes is chosen in route-choice.ts, among shared
 * memory, TCP and the bus (bus-route.ts).
 * @module
 */
import { BehaviorSubject } from 'rxjs';
import type { Msg, NatsConnection, Subscription } from 'nats';
import { createInbox, headers } from './nats-client.js';
import {
  ShutdownError,
  TransportError,
  WorkerUnavailableError,
  Frame,
  payloadFrame,
  RequestFailure,
  type BeaconCapable,
  type BeaconSlot,
  type BeaconSpec,
  type InboundMessage,
  type Payload,
  type RouteReporting,
  type SinkCapable,
  type SinkRequestOptions,
  type SinkSubscribeOptions,
  type Transport,
  type TransportRoute,
  type TransportStatus,
  type TransportSubscription,
} from '@tensorbus/core';
import { abortError, holdPayload, letGoPinned, type HeldPayload } from '@tensorbus/core/internal';
import { importedFrom } from './request-origin.js';
import { DEFAULT_CHUNK_TIMEOUT_MS, HEADROOM } from './chunks/chunk-protocol.js';
import { isAnnouncement, readAnnouncement, receiveChunked, sendPull } from './chunks/chunk-receiver.js';
import { sendChunked, type SendOutcome } from './chunks/chunk-sender.js';
import type { DirectPlane, DirectStats } from '@tensorbus/direct-routes';
import { H_ROUTE } from '@tensorbus/direct-routes/headers';
import { BusRoute } from './bus-route.js';
import { permissionError, permissionViolation } from './errors.js';
import type { NatsTransportOptions } from './options.js';
import type { PendingRequest } from './request/pending-request.js';
import { PendingRequests } from './request/pending-requests.js';
import { RouteChoice } from './route-choice.js';
import { checkSubject, isValidSubject } from './subject-check.js';

/** A message to publish: small ones go as they are, large ones announced (see {@link NatsTransport.send}). */
interface Outgoing {
  subject: string;
  /** The bytes, a share the sender takes. */
  data: Frame;
  /** Where the answer goes (requests). */
  reply?: string;
  /** Serve a large payload to every subscriber that pulls it (publish), not to the first one only. */
  fanOut?: boolean;
  /** A direct route offered for later requests (replies of an exclusive subscription). */
  route?: string;
}

/** Request subjects remembered as checked; the map starts over beyond this. */
const MAX_CHECKED_SUBJECTS = 1024;

/** A Transport on one NATS connection. */
export class NatsTransport implements Transport, SinkCapable, RouteReporting, BeaconCapable {
  readonly kind = 'nats';
  readonly takesDeferredBytes = true;
  readonly maxPayload: number;
  readonly status$ = new BehaviorSubject<TransportStatus>('connected');
  private readonly prefix: string;
  private readonly inbox: string;
  private readonly inboxPrefix: string;
  private readonly requests: PendingRequests;
  /** Rejecters of flushes awaiting the server. */
  private readonly flushes = new Set<(error: Error) => void>();
  private readonly muxSubscription: Subscription;
  private readonly chunkTimeoutMs: number;
  private readonly maxTransferBytes: number;
  private readonly smallLimit: number;
  private closed = false;
  private readonly beacons = new Set<BeaconSlot>();
  /** Request subjects that passed checkSubject, with the namespace put in front (bounded by {@link MAX_CHECKED_SUBJECTS}). */
  private readonly checkedSubjects = new Map<string, string>();
  /** Chooses each request's route: the direct one where learnt, else the bus. */
  private readonly routes: RouteChoice<PendingRequest>;

  constructor(
    private readonly nc: NatsConnection,
    options: NatsTransportOptions,
    /** Direct routes and data plane; undefined when turned off (and in a browser). */
    private readonly direct?: DirectPlane,
    /** Starts a beacon slot publishing on a full subject; undefined when beacons are off (and in a browser). */
    private readonly beaconStarter?: (subject: string, spec: BeaconSpec) => BeaconSlot | undefined,
  ) {
    this.prefix = options.namespace ? `${options.namespace}.` : '';
    this.inboxPrefix = options.inboxPrefix ?? '_INBOX';
    if (options.namespace) checkSubject(options.namespace, 'subject');
    checkSubject(this.inboxPrefix, 'reply subject');
    this.inbox = createInbox(this.inboxPrefix);
    this.requests = new PendingRequests(this.inbox);
    this.maxPayload = nc.info?.max_payload ?? 1_048_576;
    this.smallLimit = this.maxPayload - HEADROOM;
    this.chunkTimeoutMs = options.chunkTimeoutMs ?? DEFAULT_CHUNK_TIMEOUT_MS;
    this.maxTransferBytes = options.maxTransferBytes ?? 2 ** 31 - 1;
    const bus = new BusRoute((request, data) => this.viaBus(request, data));
    // Shared memory (where it applies), TCP, then the bus, which carries every subject.
    this.routes = new RouteChoice<PendingRequest>(direct ? [...direct.routes, bus] : [bus]);
    this.muxSubscription = nc.subscribe(`${this.inbox}.*`, { callback: (err, msg) => this.onReply(err, msg) });
    void this.watchStatus();
    void nc.closed().then(() => this.onClosed());
  }

  request(subject: string, payload: Payload, options: SinkRequestOptions = {}): Promise<Frame> {
    if (this.closed) return Promise.reject(new ShutdownError('the NATS transport is closed'));
    if (options.signal?.aborted) return Promise.reject(abortError(options.signal));
    let full = this.checkedSubjects.get(subject);
    if (full === undefined) {
      full = this.prefix + subject;
      try {
        checkSubject(full, 'subject');
      } catch (error) {
        return Promise.reject(error as Error);
      }
      // A caller requests few subjects (one per worker it calls), each checked once.
      if (this.checkedSubjects.size >= MAX_CHECKED_SUBJECTS) this.checkedSubjects.clear();
      this.checkedSubjects.set(subject, full);
    }
    const request = this.requests.open({ subject: full, label: subject, timeoutMs: options.timeoutMs, signal: options.signal });
    options.canceller?.((reason) => request.reject(reason));
    // The request's own hold on the payload, while its maker surely holds it: kept until it settles.
    const held = holdPayload(payload);
    request.whenDone(() => held.release());
    this.routes.send(request, held.data, options.replySink);
    return request.promise;
  }

  routeOf(subject: string): TransportRoute {
    return this.routes.mediumOf(this.prefix + subject);
  }

  /** Publishes `request` on the bus: as it is when small, announced (and pulled in chunks or fetched directly) when large. */
  private viaBus(request: PendingRequest, data: HeldPayload): void {
    try {
      // The bus takes whole frames: a deferred one is read into a frame now.
      const frame = payloadFrame(data);
      if (!this.isLarge(frame)) return this.publishSmall({ subject: request.subject, data: frame, reply: request.replySubject });
      const outgoing = this.sendLarge({ subject: request.subject, data: frame, reply: request.replySubject, fanOut: false });
      // A request that ends without its answer stops serving its payload; an answered one lets the transfer finish.
      request.whenDone((error) => {
        if (error) outgoing.cancel(error.message);
      });
      outgoing.delivered.catch((error: Error) => request.reject(error));
    } catch (error) {
      request.reject(error instanceof Error ? error : new Error(String(error)));
    }
  }

  publish(subject: string, data: Uint8Array | Frame): void {
    if (this.closed) throw new ShutdownError('the NATS transport is closed');
    const full = this.prefix + subject;
    checkSubject(full, 'subject');
    this.send({ subject: full, data: payloadFrame(data), fanOut: true });
  }

  subscribe(subject: string, handler: (message: InboundMessage) => void, options: SinkSubscribeOptions = {}): TransportSubscription {
    if (this.closed) throw new ShutdownError('the NATS transport is closed');
    const strip = this.prefix.length;
    const full = this.prefix + subject;
    checkSubject(full, 'subject', { wildcards: true });
    // A subject only this subscriber serves can be reached directly: replies tell requesters how.
    const route = options.exclusive && !options.queue
      ? this.direct?.serve(full, (data, respond, sink) => handler({ subject, data, sink, reply: 'direct', respond: (answer) => !this.closed && respond(answer) }), options.requestSink)
      : undefined;
    const deliver = (msg: Msg, data: Frame) => {
      // A reply subject is whatever the sender wrote: one that is not a plain subject is never answered.
      const reply = msg.reply && isValidSubject(msg.reply) ? msg.reply : undefined;
      handler({
        subject: msg.subject.slice(strip),
        data,
        reply,
        origin: importedFrom(msg),
        respond: (answer) => {
          if (!reply || this.closed) return false;
          try {
            // Requests that came through another account's service import (replies rewritten to
            // _R_.…) get no route: between accounts, NATS alone decides who may reach whom.
            this.send({ subject: reply, data: payloadFrame(answer), fanOut: false, route: reply.startsWith('_R_.') ? undefined : route?.header });
            return true;
          } catch {
            return false;
          }
        },
      });
    };
    const sub = this.nc.subscribe(full, {
      queue: options.queue,
      callback: (err, msg) => {
        if (err) {
          options.onError?.(err.isPermissionError?.() || err.name === 'PermissionViolationError' ? permissionError('subscribe', this.prefix + subject, err) : err);
          return;
        }
        if (!isAnnouncement(msg)) return deliver(msg, Frame.of(msg.data));
        // A handler that throws fails that delivery only (told to onError), never the process.
        this.receiveLarge(msg)
          .then((data) => deliver(msg, data))
          .catch((error: unknown) => options.onError?.(error instanceof Error ? error : new Error(String(error))));
      },
    });
    return {
      unsubscribe: () => {
        route?.remove();
        sub.unsubscribe();
      },
    };
  }

  /**
   * Publishes `spec`'s messages from the process's beacon thread, on a NATS
   * connection of its own, so they go on while this thread computes (see
   * beacon/beacon-host.ts). Undefined when beacons are off or cannot run here.
   */
  startBeacon(spec: BeaconSpec): BeaconSlot | undefined {
    if (this.closed || !this.beaconStarter) return undefined;
    const subject = this.prefix + spec.subject;
    checkSubject(subject, 'subject');
    const slot = this.beaconStarter(subject, spec);
    if (!slot) return undefined;
    this.beacons.add(slot);
    return {
      ready: slot.ready,
      remove: () => {
        this.beacons.delete(slot);
        slot.remove();
      },
    };
  }

  async flush(): Promise<void> {
    if (this.closed) throw new ShutdownError('the NATS transport is closed');
    // nats.js leaves a flush pending for good when the connection closes meanwhile: closing fails it (onClosed).
    await new Promise<void>((resolve, reject) => {
      this.flushes.add(reject);
      this.nc.flush().then(resolve, reject).finally(() => this.flushes.delete(reject));
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.onClosed();
    await this.nc.close();
  }

  /** What went beside the bus so far (for tests and the benchmark). */
  get directStats(): DirectStats {
    return this.direct?.stats ?? { fetched: 0, served: 0, calls: 0, answered: 0, sharedRequests: 0, sharedReplies: 0, fillingRequests: 0, fillingReplies: 0, streamedSent: 0, streamedReceived: 0, stripedSent: 0, stripedReceived: 0 };
  }

  /** Publishes small payloads as they are, large ones announced. Takes the share `outgoing.data`. */
  private send(outgoing: Outgoing): void {
    if (this.isLarge(outgoing.data)) this.sendLarge(outgoing);
    else this.publishSmall(outgoing);
  }

  /** Publishes `data` as it is, taking its share. */
  private publishSmall({ subject, data, reply, route }: Outgoing): void {
    let h: ReturnType<typeof headers> | undefined;
    if (route) {
      h = headers();
      h.set(H_ROUTE, route);
    }
    try {
      this.nc.publish(subject, data.bytes, { reply, headers: h });
    } finally {
      // The client may keep the bytes in its write queue until flushed: never reused under it.
      letGoPinned(data);
    }
  }

  /** True when `data` travels by announcement: beyond max_payload, or big enough for the data plane. */
  private isLarge(data: Frame): boolean {
    return data.byteLength > this.smallLimit || (this.direct !== undefined && data.byteLength >= this.direct.minBytes);
  }

  /** Announces `data` (taking its share), offered on the data plane when there is one, in chunks in any case. */
  private sendLarge({ subject, data, reply, fanOut, route }: Outgoing): SendOutcome {
    // The offer and the transfer each hold a share: once both let go, the memory can hold the next frame.
    const direct = this.direct?.offer(data);
    return sendChunked(this.nc, {
      subject,
      reply,
      frame: data,
      chunkSize: this.smallLimit,
      timeoutMs: this.chunkTimeoutMs,
      inbox: () => createInbox(this.inboxPrefix),
      keepForMore: fanOut,
      direct,
      route,
    });
  }

  /** Receives an announced payload: directly where the offer is reachable, else in chunks through NATS. */
  private async receiveLarge(msg: Msg): Promise<Frame> {
    // Checked once, here where it arrives: everything below publishes to its pull subject.
    const announcement = readAnnouncement(msg);
    if (this.direct && announcement.size <= this.maxTransferBytes) {
      const data = await this.direct.fetch(announcement.direct, announcement.size);
      if (data !== undefined) {
        sendPull(this.nc, announcement, { s: '', done: true });
        return data;
      }
    }
    // The chunked path always works while the sender lives.
    return receiveChunked(this.nc, announcement, { maxBytes: this.maxTransferBytes, timeoutMs: this.chunkTimeoutMs, inbox: () => createInbox(this.inboxPrefix) });
  }

  /** A NATS callback: a throw here would stop the connection's reader, so a failure fails that request only. */
  private onReply(err: Error | null, msg: Msg): void {
    if (err) return;
    const request = this.requests.forReply(msg.subject);
    if (!request) return;
    try {
      this.takeReply(request, msg);
    } catch (error) {
      request.reject(new TransportError(`could not take a reply: ${(error as Error).message}`, { cause: error }));
    }
  }

  private takeReply(request: PendingRequest, msg: Msg): void {
    if (msg.headers?.code === 503) {
      request.reject(new WorkerUnavailableError(`no responders on '${request.subject.slice(this.prefix.length)}'`, { reason: RequestFailure.NoResponders }));
      return;
    }
    this.direct?.learnt.learn(request.subject, msg.headers?.get(H_ROUTE));
    if (!isAnnouncement(msg)) {
      request.resolve(Frame.of(msg.data));
      return;
    }
    this.receiveLarge(msg).then(
      (data) => request.resolve(data),
      (error: Error) => request.reject(error),
    );
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (this.closed) break;
      const type = String(status.type);
      if (type === 'disconnect' || type === 'reconnecting') this.setStatus('reconnecting');
      else if (type === 'reconnect') this.setStatus('connected');
      // The client puts a permission violation's operation and subject beside its error code, not in it.
      else if (type === 'error') this.onAsyncError(status as { permissionContext?: unknown; error?: unknown });
    }
  }

  /**
   * A permissions violation fails the requests it concerns instead of letting
   * them time out. The client parses the server's text into an operation and
   * a subject (see {@link permissionViolation}): that is what is read here,
   * never the text.
   */
  private onAsyncError(status: { permissionContext?: unknown; error?: unknown }): void {
    const violation = permissionViolation(status);
    if (!violation) return;
    const { operation, subject } = violation;
    for (const request of this.requests.all()) {
      if (operation === 'publish' ? request.subject === subject : subject.startsWith(this.inbox)) {
        request.reject(permissionError(operation, subject, status.permissionContext ?? status.error));
      }
    }
  }

  private setStatus(status: TransportStatus): void {
    if (this.status$.value !== status && !this.status$.closed) this.status$.next(status);
  }

  private onClosed(): void {
    if (this.closed) return;
    this.closed = true;
    // Nothing published for this transport outlives it (the beacon thread ends with its last slot).
    for (const slot of this.beacons) slot.remove();
    this.beacons.clear();
    this.direct?.close();
    for (const request of this.requests.all()) request.reject(new ShutdownError('the NATS transport was closed while a request was pending'));
    for (const fail of this.flushes) fail(new ShutdownError('the NATS transport was closed during a flush'));
    this.flushes.clear();
    this.setStatus('closed');
    this.status$.complete();
  }
}
