/**
 * How a direct connection (peer-connection.ts) behaves: the limits the pool
 * gives each connection, and the options of one connection.
 * @module
 */
import type { ReplyLanes } from './reply-lanes.js';

/** How a PeerConnection behaves (the pool's options, per connection). */
export interface ConnectionLimits {
  /**
   * Fail the connection when requests are pending and no byte arrives for
   * this long, ms (for fetches, answered at once); undefined for requests
   * that may legitimately take any time (calls).
   */
  stallTimeoutMs?: number;
  /** Replies larger than this fail their request, unallocated (default 2 GiB - 1). */
  maxReplyBytes?: number;
  /** Close the connection once nothing has been under way for this long, ms (0 or undefined: never). */
  idleCloseMs?: number;
  /**
   * Connections to keep to a data port on another host once a large reply
   * came from it, this one included (see reply-lanes.ts; default 1: none
   * beside it). Loopback endpoints get none (processes of one host share
   * memory instead).
   */
  lanes?: number;
  /** Connect to a data port of this host through its Unix socket when it has one this user owns (default true; see unix-socket.ts). */
  unixSockets?: boolean;
}

/** Options of PeerConnection. */
export interface PeerConnectionOptions extends ConnectionLimits {
  /** `host:port`, for messages. */
  endpoint: string;
  host: string;
  port: number;
  /** The data port's Unix socket, connected to instead of `host:port` (unix-socket.ts). */
  path?: string;
  /** Told once when the connection breaks or closes; `idle` when it was closed for being idle. */
  onBroken: (idle: boolean) => void;
  /**
   * Let the socket read straight into a reply sink's memory (default: where
   * the WASM heap stays put, `READ_INTO_HEAP`); when false, sink bytes are
   * read into the connection's own buffer and copied, since the memory of a
   * read is asked for before other code runs and used after.
   */
  readIntoSink?: boolean;
  /** This connection is a lane of `group`, with this index: it sends no requests and takes parts of the group's replies. */
  laneOf?: { group: ReplyLanes; token: Buffer; index: number };
  /** Told of each striped reply that came whole. */
  onStriped?: () => void;
}
