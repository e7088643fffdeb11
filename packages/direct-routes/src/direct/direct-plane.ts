/**
 * Everything a NATS transport does beside the bus, in one place: its data
 * port (offers and routes it serves), the fetches of others' offers, and the
 * routes beside the bus its requests take once learnt: shared memory
 * ({@link SharedMemoryRoute}) and TCP ({@link DirectRoute}). See
 * docs/data-plane.md.
 * @module
 */
import type { Frame, Payload } from '@tensorbus/core';
import { useBufferSource } from '@tensorbus/core/internal';
import { SharedSegments } from '../shm/shared-segments.js';
import { loadShm } from '../shm/shm-native.js';
import { SharedMemoryRoute } from '../shm/shm-route.js';
import { busyPoll } from './busy-poll.js';
import { DirectCaller } from './direct-caller.js';
import { DirectClient } from './direct-client.js';
import { CLIENT_IDLE_MARGIN, DEFAULT_IDLE_TIMEOUT_MS, isLoopback, lanesOption, parseOffer, reachableFromHere, type DirectOffer, type DirectOptions } from './direct-protocol.js';
import { DirectRoute, LearntRoutes } from './direct-route.js';
import { unixSocketsByDefault } from './unix-socket.js';
import { DirectServer, type Offered, type RequestSinkFactory, type RouteHandler, type ServedRoute } from './direct-server.js';

/** Counts of what went beside the bus (for tests and the benchmark). */
export interface DirectStats {
  /** Offered payloads this transport fetched from others. */
  fetched: number;
  /** Offered payloads others fetched from this transport. */
  served: number;
  /** Requests this transport sent on direct routes and got answered. */
  calls: number;
  /** Requests this transport answered on its routes. */
  answered: number;
  /** Requests this transport sent on direct routes as shared-memory references. */
  sharedRequests: number;
  /** Replies this transport received on direct routes as shared-memory references. */
  sharedReplies: number;
  /** Of those, requests sent and replies received while they still filled their segment (large deferred frames; see shm/filling.ts). */
  fillingRequests: number;
  fillingReplies: number;
  /** Deferred frames (large tensors read as they are sent) this transport wrote on its data port. */
  streamedSent: number;
  /** Replies this transport read straight into a reply sink (tensor memory). */
  streamedReceived: number;
  /** Replies and fetched payloads this transport wrote, and got, striped over a requester's lanes (between hosts; see docs/data-plane.md). */
  stripedSent: number;
  stripedReceived: number;
}

let segmentsOfProcess: SharedSegments | undefined;
let told = false;

/**
 * The segments of this process, shared by its transports; the first use makes
 * them the source of the buffer pool's fresh large buffers, and says on
 * stderr which same-host path is in use. Undefined without the addon.
 */
function processSegments(): SharedSegments | undefined {
  if (segmentsOfProcess) return segmentsOfProcess;
  const { binding, reason } = loadShm();
  if (!told && process.env.TENSORBUS_QUIET !== '1') {
    const polling = busyPoll.windowUs > 0 ? `busy polling ${busyPoll.windowUs} µs after each send while this host's polling processes are no more than its cores (TENSORBUS_BUSY_POLL_US=0 turns it off)` : 'no busy polling';
    const medium = unixSocketsByDefault() ? 'Unix sockets' : 'TCP';
    process.stderr.write(`[tensorbus] same-host direct calls: ${binding ? `shared memory, over ${medium}` : `${medium} (shared memory unavailable: ${reason})`}; ${polling}\n`);
  }
  told = true;
  if (!binding) return undefined;
  const maxFrame = Number(process.env.TENSORBUS_SHM_MAX_FRAME_BYTES);
  segmentsOfProcess = new SharedSegments(binding, Number.isSafeInteger(maxFrame) && maxFrame > 0 ? maxFrame : undefined);
  useBufferSource(segmentsOfProcess);
  return segmentsOfProcess;
}

/** How {@link DirectPlane.start} bounds the data plane. */
export interface DirectPlaneLimits {
  /** A fetch that makes no progress for this long fails, ms. */
  stallTimeoutMs: number;
  /** Nothing larger is taken, in either direction, before it is allocated (default 2 GiB - 1). */
  maxTransferBytes?: number;
  /**
   * The NATS connection uses TLS: the direct plane is plaintext, so it stays
   * on this host — the port listens and is announced on loopback only,
   * whatever the options say, and only loopback endpoints are used; calls and
   * payloads between hosts go through the encrypted bus.
   */
  confined?: boolean;
}

/** The direct routes and data plane of one transport. */
export class DirectPlane {
  private readonly client: DirectClient;
  private readonly caller: DirectCaller;
  /** The routes this transport learnt from replies' tb-route headers, which both routes below take. */
  readonly learnt: LearntRoutes;
  /** Shared memory, with the addon (undefined without it, or when turned off). */
  private readonly sharedMemory: SharedMemoryRoute | undefined;
  /** This transport's routes beside the bus, in order of preference: shared memory where it applies, then TCP. */
  readonly routes: readonly (SharedMemoryRoute | DirectRoute)[];

  private constructor(
    private readonly server: DirectServer,
    stallTimeoutMs: number,
    segments: SharedSegments | undefined,
    maxTransferBytes: number,
    connectionIdleMs: number,
    /** Only loopback endpoints, in both directions (the bus is encrypted and this plane is not). */
    private readonly confined: boolean,
    lanes: number,
    unixSockets: boolean,
  ) {
    // Closed before a port would close them as idle, so a request never races that close.
    const idleCloseMs = Math.floor(connectionIdleMs * CLIENT_IDLE_MARGIN);
    this.client = new DirectClient(stallTimeoutMs, idleCloseMs, lanes, unixSockets);
    // Large direct requests are offered for the responder to pull into its own buffer.
    const offer = (data: Payload, onServed: () => void) => (data.byteLength >= server.minBytes ? server.offer(data, onServed) : undefined);
    let sharedMemory: SharedMemoryRoute | undefined;
    // A broken connection unmaps what its responder lent.
    this.caller = new DirectCaller(offer, maxTransferBytes, idleCloseMs, lanes, (connection) => sharedMemory?.connectionBroken(connection), unixSockets);
    this.learnt = new LearntRoutes((route) => this.allowed(route) && reachableFromHere(route));
    this.sharedMemory = sharedMemory = segments && new SharedMemoryRoute(this.learnt, this.caller, segments);
    const tcp = new DirectRoute(this.learnt, this.caller);
    this.routes = sharedMemory ? [sharedMemory, tcp] : [tcp];
    server.useFetcher((offer, size, sink) => this.client.fetch(offer, size, sink));
    if (segments) server.useSharedMemory(segments);
  }

  /**
   * Opens the data port (see {@link DirectPlaneLimits} for the rest).
   */
  static async start(options: DirectOptions, { stallTimeoutMs, maxTransferBytes = 2 ** 31 - 1, confined = false }: DirectPlaneLimits): Promise<DirectPlane> {
    if (options.busyPollUs !== undefined) busyPoll.windowUs = options.busyPollUs;
    // The host's other processes count this one from its start, not from its first send.
    busyPoll.enterRoster();
    const segments = options.sharedMemory === false ? undefined : processSegments();
    let listen = options;
    if (confined && !(isLoopback(options.host ?? '127.0.0.1') && isLoopback(options.advertise ?? options.host ?? '127.0.0.1'))) {
      listen = { ...options, host: '127.0.0.1', advertise: undefined };
      if (process.env.TENSORBUS_QUIET !== '1') {
        process.stderr.write(`[tensorbus] NATS uses TLS and the direct data plane does not: its port listens on 127.0.0.1 only, not ${options.host ?? ''}${options.advertise ? ` (advertised ${options.advertise})` : ''}; calls between hosts go through NATS\n`);
      }
    }
    const unixSockets = options.unixSockets ?? unixSocketsByDefault();
    const server = await DirectServer.start({ ...listen, unixSockets, maxRequestBytes: options.maxRequestBytes ?? maxTransferBytes });
    const lanes = lanesOption(options.lanes);
    return new DirectPlane(server, stallTimeoutMs, segments, maxTransferBytes, options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, confined, lanes, unixSockets);
  }

  /** True when `endpoint` may be used from here (under TLS, loopback only: nothing crosses the network in clear). */
  private allowed(endpoint: DirectOffer): boolean {
    return !this.confined || isLoopback(endpoint.host);
  }

  /** Payloads at least this large are offered on the data plane. */
  get minBytes(): number {
    return this.server.minBytes;
  }

  /** Offers a payload announced on the bus (the offer holds a share of it until withdrawn). */
  offer(data: Frame): Offered {
    return this.server.offer(data);
  }

  /** Serves requests to `subject` (full) on a direct route; large ones go into the sink `sinkFor` gives, if any. */
  serve(subject: string, handler: RouteHandler, sinkFor?: RequestSinkFactory): ServedRoute {
    return this.server.route(subject, handler, sinkFor);
  }

  /**
   * Fetches the payload a tb-direct header offers, or resolves undefined when
   * it cannot (no valid offer, another host, a failure): then use the bus.
   */
  async fetch(header: string | undefined, size: number): Promise<Frame | undefined> {
    const offer = parseOffer(header);
    if (!offer || !this.allowed(offer) || !this.client.reachable(offer)) return undefined;
    try {
      return await this.client.fetch(offer, size);
    } catch {
      return undefined;
    }
  }

  get stats(): DirectStats {
    const { calls, streamedReceived } = this.caller;
    const { sharedRequests = 0, sharedReplies = 0, fillingRequests = 0, fillingReplies = 0 } = this.sharedMemory ?? {};
    const { served, streamedSent, stripedSent } = this.server;
    const stripedReceived = this.caller.stripedReceived + this.client.striped;
    return { fetched: this.client.fetched, served, calls, answered: this.server.calls, sharedRequests, sharedReplies, fillingRequests, fillingReplies, streamedSent, streamedReceived, stripedSent, stripedReceived };
  }

  /** Closes the port and every connection. */
  close(): void {
    this.server.close();
    this.client.close();
    this.caller.close();
    this.learnt.clear();
  }
}

/**
 * Whether direct calls between processes of this host can go through shared
 * memory here, and if not, why (the addon is not built, not Linux, or
 * `TENSORBUS_SHM=0`).
 *
 * @example
 * ```ts
 * const { available, reason } = sharedMemoryStatus();
 * console.log(available ? 'shared memory' : `TCP: ${reason}`);
 * ```
 */
export function sharedMemoryStatus(): { available: boolean; reason?: string } {
  const { binding, reason } = loadShm();
  return binding ? { available: true } : { available: false, reason };
}
