/**
 * The connections a data port serves: one record per socket (its parser,
 * writer, lent replies, proven peer and activity), how
 * many may be open at once, and the sweep that closes the silent and idle
 * ones.
 * @module
 */
import type { Socket } from 'node:net';
import type { Frame } from '@tensorbus/core';
import type { PeerProcess } from '../shm/socket-peer.js';
import { FrameWriter } from './frame-writer.js';
import type { RequestParser } from './request-parser.js';

/** What a data port keeps of one connection it serves. */
export class ServedConnection {
  /** Writes its reply frames. */
  readonly writer: FrameWriter;
  /** Replies lent in shared memory (a share each), by segment id, until given back. */
  readonly lent = new Map<string, Frame>();
  /** Reads its requests. */
  readonly parser: RequestParser;
  /**
   * The process shown to hold the other end, once it sent a segment
   * reference; null when the first pid it named could not be shown to (its
   * references are all refused: a hostile peer cannot make this process
   * search /proc again and again); undefined before.
   */
  peer: PeerProcess | null | undefined;
  /** On a Unix socket, the process the kernel says made the other end (null: it could not be read); undefined on TCP. */
  unixPeer: PeerProcess | null | undefined;
  /** It has sent a whole request. */
  spoke = false;
  /** Bytes arrived since the last sweep. */
  active = true;
  /** When it was last seen active or busy, ms. */
  since = Date.now();
  /** Requests under way (handlers not yet answered, payloads being pulled, requests still mapped). */
  busy = 0;
  /** The socket closed: nothing is lent or given back on it any more. */
  closed = false;

  /** `parserOf` makes the connection's request parser (it may keep the connection it is given). */
  constructor(readonly socket: Socket, parserOf: (connection: ServedConnection) => RequestParser) {
    this.writer = new FrameWriter(socket);
    this.parser = parserOf(this);
  }

  /** Something is under way on it: bytes came since the last sweep, a request runs, a body is being read or a reply written, or a reply is lent. */
  get underWay(): boolean {
    return this.active || this.busy > 0 || this.parser.midBody || this.socket.writableLength > 0 || this.lent.size > 0;
  }

  /** The socket closed: every lent reply's share goes (nothing can read them through this connection any more). */
  drop(): void {
    this.closed = true;
    this.parser.close();
    for (const answer of this.lent.values()) answer.release();
    this.lent.clear();
  }
}

/** How many connections a data port holds, and how long they may stay silent or idle, ms. */
export interface ServedLimits {
  maxConnections: number;
  firstRequestTimeoutMs: number;
  idleTimeoutMs: number;
}

/** The connections of one data port, by socket, bounded in number and swept when silent or idle. */
export class ServedConnections {
  private readonly bySocket = new Map<Socket, ServedConnection>();
  private sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly limits: ServedLimits) {}

  /**
   * Makes room for one more connection: at the limit, closes the oldest one
   * that has not sent a whole request yet. False when every one has (the new
   * one waits for a free place: the requester retries later).
   */
  admit(): boolean {
    return this.bySocket.size < this.limits.maxConnections || this.evictSilent();
  }

  /** Keeps `connection` until its socket closes, and sweeps while there are connections. */
  add(connection: ServedConnection): void {
    this.bySocket.set(connection.socket, connection);
    this.sweepSoon();
  }

  /** The connection of `socket`, while it is served. */
  get(socket: Socket): ServedConnection | undefined {
    return this.bySocket.get(socket);
  }

  /** The socket of `connection` closed: the connection is dropped (also when it was closed to make room). */
  remove(connection: ServedConnection): void {
    if (this.bySocket.get(connection.socket) === connection) this.bySocket.delete(connection.socket);
    connection.drop();
  }

  /** Closes every connection and stops sweeping. */
  closeAll(): void {
    for (const socket of this.bySocket.keys()) socket.destroy();
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Closes the oldest connection that has not sent a whole request yet; false when every one has. */
  private evictSilent(): boolean {
    for (const [socket, connection] of this.bySocket) {
      if (connection.spoke) continue;
      socket.destroy();
      // Dropped once its socket says it closed.
      this.bySocket.delete(socket);
      return true;
    }
    return false;
  }

  /** Runs the sweep of idle and silent connections while there are connections. */
  private sweepSoon(): void {
    if (this.sweeper) return;
    const { firstRequestTimeoutMs, idleTimeoutMs } = this.limits;
    const period = Math.max(10, Math.min(1_000, firstRequestTimeoutMs / 4, idleTimeoutMs / 4));
    this.sweeper = setInterval(() => this.sweep(), period);
    this.sweeper.unref();
  }

  /** Closes connections that never sent a whole request in time, and those idle too long with nothing under way. */
  private sweep(): void {
    const now = Date.now();
    for (const [socket, connection] of this.bySocket) {
      if (connection.underWay) {
        connection.active = false;
        connection.since = now;
        continue;
      }
      if (now - connection.since >= (connection.spoke ? this.limits.idleTimeoutMs : this.limits.firstRequestTimeoutMs)) socket.destroy();
    }
    if (this.bySocket.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}
