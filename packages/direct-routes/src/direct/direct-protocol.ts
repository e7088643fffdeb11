/**
 * The direct data plane's wire format, in one table: every frame a data-port
 * connection carries. Requests flow from the connecting side (a requester,
 * or a receiver fetching an offer) to the port; replies and parts flow back;
 * a give-back flows either way. Numbers are big-endian; `size` (and `total`,
 * `offset`) is a u64 written as two u32 (hi, lo); `ref` is a 32-byte
 * shared-memory segment reference, [pid u32][fd u32][segment id 8][segment
 * size][frame length] (shm/shared-segments.ts). See docs/data-plane.md for
 * the routes and message flows; the NATS headers that offer a port
 * (tb-route, tb-direct) are in direct-headers.ts.
 *
 * | op   | direction     | frame                                                                           | meaning |
 * |------|---------------|---------------------------------------------------------------------------------|---------|
 * | 0x01 | to the port   | [0x01][id u32][token 16]                                                        | GET: send me the offer `token` names (from a tb-direct header) |
 * | 0x02 | to the port   | [0x02][id u32][token 16][subject length u16][subject][size][payload]            | CALL: a request to `subject` on the route `token` (from a tb-route header) |
 * | 0x04 | to the port   | [0x04][id u32][token 16][subject length u16][subject][offer length u16][offer][size] | PULLED CALL: the port GETs the payload from the requester's port (`offer`, a tb-direct value) |
 * | 0x05 | to the port   | [0x05][id u32][token 16][subject length u16][subject][ref]                      | SHM CALL: the payload lies in the requester's segment `ref` |
 * | 0x07 | to the port   | [0x07][id u32][token 16][subject length u16][subject][ref]                      | FILLING CALL: as SHM CALL, the segment still being filled (shm/filling.ts) |
 * | 0x08 | to the port   | [0x08][group token 16][lane index u8]                                           | LANE: this connection joins a lane group (index 0: the requester's first connection) |
 * | 0x03 | from the port | [0x03][id u32][status u8][size][body]                                           | REPLY to request `id`, status below |
 * | 0x09 | from the port | [0x09][id u32][total][offset][length u32][length bytes]                         | PART of the reply to `id`, on one connection of its group |
 * | 0x06 | either way    | [0x06][0 u32][0x00][size = 32][ref]                                             | GIVE-BACK: the segment `ref` is no longer read here |
 *
 * | status | body      | meaning |
 * |--------|-----------|---------|
 * | 0x00   | the reply | OK: the handler's answer, or the offer's bytes for a GET |
 * | 0x01   | empty     | NO ROUTE: no such route or offer (removed, withdrawn, never made): not delivered |
 * | 0x02   | ref       | SHM: the reply lies in the responder's segment `ref` |
 * | 0x04   | empty     | NO SHM: the responder cannot map the requester's segment: not delivered |
 * | 0x06   | ref       | FILLING: the reply is being filled into the responder's segment `ref`; read it as it fills |
 * | 0x07   | empty     | FILL STALLED: the request's segment stopped filling before it was whole: not delivered |
 *
 * Every request (GET, CALL, PULLED CALL, SHM CALL, FILLING CALL) carries an id and gets
 * exactly one REPLY, or PARTs adding up to one, with that id, in any order
 * (peer-connection.ts reads them); LANE and GIVE-BACK get none. A request
 * answered NO ROUTE, NO SHM or FILL STALLED, or whose connection could not be opened, was
 * not delivered and may go another way (NO ROUTE: the bus; NO SHM: its bytes,
 * on the TCP route; FILL STALLED: whole in a segment); one whose
 * connection breaks after it was sent fails with WorkerUnavailableError (it
 * may have run). Anything else on a connection drops it.
 * @module
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { InvalidArgumentError } from '@tensorbus/core';

export { H_DIRECT, H_ROUTE } from './direct-headers.js';
/** Request op: send me the payload of this token. */
export const OP_GET = 0x01;
/** Request op: a request to a subject served over a direct route. */
export const OP_CALL = 0x02;
/** Response op: the reply to an OP_CALL or OP_CALL_PULLED. */
export const OP_REPLY = 0x03;
/** Request op: a direct request whose large payload the responder pulls from the requester's data port. */
export const OP_CALL_PULLED = 0x04;
/** Request op: a direct request whose payload lies in the requester's shared-memory segment. */
export const OP_CALL_SHM = 0x05;
/** One-way op, either way: the segment whose reference follows is no longer read here (see {@link giveBackFrame}). */
export const OP_RELEASE = 0x06;
/** Request op: as OP_CALL_SHM, the segment still filling (see shm/filling.ts). */
export const OP_CALL_FILLING = 0x07;
/** One-way op: this connection joins a lane group (see stripes). */
export const OP_LANE = 0x08;
/** Response op: a part of a striped reply. */
export const OP_PART = 0x09;
/** Bytes of an OP_LANE frame: op, group token, lane index. */
export const LANE_BYTES = 1 + 16 + 1;
/** Bytes of an OP_PART header: op, id (u32), total (two u32), offset (two u32), length (u32). */
export const PART_HEADER_BYTES = 1 + 4 + 8 + 8 + 4;
/** Connections of a lane group, the first one included (the most a data port takes in one group). */
export const MAX_LANES = 8;
/** Connections a requester keeps to another host's data port by default (see DirectOptions.lanes). */
export const DEFAULT_LANES = 8;

/** `lanes` (DirectOptions.lanes) if it is a count of lanes, else the default; throws an InvalidArgumentError for anything else. */
export function lanesOption(lanes: number | undefined): number {
  if (lanes === undefined) return DEFAULT_LANES;
  if (!Number.isInteger(lanes) || lanes < 1 || lanes > MAX_LANES) {
    throw new InvalidArgumentError(`direct.lanes must be a whole number of connections from 1 to ${MAX_LANES}, got ${String(lanes)}`);
  }
  return lanes;
}
/** Replies at least this large go out striped over a requester's lanes, where it has opened them... */
export const STRIPE_MIN_BYTES = 2 ** 20;
/**
 * ...and at most this large: larger ones are bound by the copies' throughput
 * rather than by TCP windows, and go whole on one connection (as measured
 * against the bench's 400 MB case; not tried striped).
 */
export const STRIPE_MAX_BYTES = 64 * 2 ** 20;
/** Parts start at multiples of this many bytes (a page): about equal, so every lane carries its share. */
export const PART_ALIGN = 4096;
/** Bytes of an OP_REPLY (and OP_RELEASE) header: op, id (u32), status, size (two u32). */
export const REPLY_HEADER_BYTES = 1 + 4 + 1 + 8;
/** Reply status: the handler answered; its bytes follow. */
export const REPLY_OK = 0x00;
/** Reply status: no such route or offer (removed, withdrawn, or never made): nothing was delivered. */
export const REPLY_NO_ROUTE = 0x01;
/** Reply status: the reply lies in the responder's segment; its reference follows. */
export const REPLY_SHM = 0x02;
/** Reply status: the responder cannot map the requester's segment; nothing was delivered. */
export const REPLY_NO_SHM = 0x04;
/** Reply status: the reply is filling the responder's segment; its reference follows. */
export const REPLY_FILLING = 0x06;
/** Reply status: the request's segment stopped filling before it was whole; nothing was delivered. */
export const REPLY_FILL_STALLED = 0x07;
/** Bytes of a token. */
export const TOKEN_BYTES = 16;
/** Bytes of an OP_CALL header before the subject: op, id (u32), route token, subject length (u16). */
export const CALL_HEAD_BYTES = 1 + 4 + TOKEN_BYTES + 2;
/** Bytes of a GET: op, id (u32), token. */
export const GET_BYTES = 1 + 4 + TOKEN_BYTES;
/** Payloads at least this large go direct by default. */
export const DEFAULT_DIRECT_MIN_BYTES = 128 * 1024;
/**
 * Bodies below this go out in one socket write with their header (a copy
 * cheaper than a second write); larger ones are written from their own
 * memory after it. Requests and replies alike.
 */
export const COALESCE_BYTES = 64 * 1024;

/** Writes `n` (up to 2^53) at `offset` as two big-endian u32. */
export function writeSize(buffer: Buffer, offset: number, n: number): void {
  buffer.writeUInt32BE(Math.floor(n / 2 ** 32), offset);
  buffer.writeUInt32BE(n >>> 0, offset + 4);
}

/** Reads a size written by {@link writeSize}. */
export function readSize(buffer: Buffer, offset: number): number {
  return buffer.readUInt32BE(offset) * 2 ** 32 + buffer.readUInt32BE(offset + 4);
}

/** The frame of a GET of the offer with `token`. */
export function getFrame(id: number, token: Buffer): Buffer {
  const frame = Buffer.allocUnsafe(GET_BYTES);
  frame[0] = OP_GET;
  frame.writeUInt32BE(id, 1);
  token.copy(frame, 5);
  return frame;
}

/** The head of a request of `size` bytes to `subject` on the route `token` (OP_CALL; the bytes follow it), or with `offer` one the responder pulls (OP_CALL_PULLED). */
export function callHead(id: number, token: Buffer, subject: string, size: number, offer?: string): Buffer {
  const subjectBytes = Buffer.from(subject, 'utf8');
  const offerBytes = offer === undefined ? undefined : Buffer.from(offer, 'utf8');
  const head = Buffer.allocUnsafe(CALL_HEAD_BYTES + subjectBytes.length + (offerBytes ? 2 + offerBytes.length : 0) + 8);
  head[0] = offerBytes ? OP_CALL_PULLED : OP_CALL;
  head.writeUInt32BE(id, 1);
  token.copy(head, 5);
  head.writeUInt16BE(subjectBytes.length, CALL_HEAD_BYTES - 2);
  subjectBytes.copy(head, CALL_HEAD_BYTES);
  if (offerBytes) {
    head.writeUInt16BE(offerBytes.length, CALL_HEAD_BYTES + subjectBytes.length);
    offerBytes.copy(head, CALL_HEAD_BYTES + subjectBytes.length + 2);
  }
  writeSize(head, head.length - 8, size);
  return head;
}

/** The header of a reply of `size` bytes (they follow it). */
export function replyHeader(id: number, status: number, size: number): Buffer {
  const header = Buffer.allocUnsafe(REPLY_HEADER_BYTES);
  header[0] = OP_REPLY;
  header.writeUInt32BE(id, 1);
  header[5] = status;
  writeSize(header, 6, size);
  return header;
}

/** The frame by which a connection joins lane group `group` as lane `index`. */
export function laneFrame(group: Buffer, index: number): Buffer {
  const frame = Buffer.allocUnsafe(LANE_BYTES);
  frame[0] = OP_LANE;
  group.copy(frame, 1);
  frame[LANE_BYTES - 1] = index;
  return frame;
}

/** The header of a part of `length` bytes at `offset` of the `total`-byte reply to request `id`. */
export function partHeader(id: number, total: number, offset: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(PART_HEADER_BYTES);
  header[0] = OP_PART;
  header.writeUInt32BE(id, 1);
  writeSize(header, 5, total);
  writeSize(header, 13, offset);
  header.writeUInt32BE(length, 21);
  return header;
}

/** The give-back of a segment, the same frame both ways: an OP_RELEASE header (id 0, status 0, size 32), then `ref` (its 32 bytes). */
export function giveBackFrame(ref: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(REPLY_HEADER_BYTES + ref.byteLength);
  frame[0] = OP_RELEASE;
  frame.writeUInt32BE(0, 1);
  frame[5] = REPLY_OK;
  writeSize(frame, 6, ref.byteLength);
  frame.set(ref, REPLY_HEADER_BYTES);
  return frame;
}

/** Options of the direct data plane. */
export interface DirectOptions {
  /** Address the data port listens on (default 127.0.0.1: same-host peers only). */
  host?: string;
  /** Address announced to receivers (default `host`); set it when listening on 0.0.0.0. */
  advertise?: string;
  /** Data port (default: a free one). */
  port?: number;
  /** Payloads at least this large go direct (default 128 KiB). */
  minBytes?: number;
  /**
   * Requests and replies on direct routes between processes of this host go
   * through shared memory where both have it (default true; the addon must be
   * built, see scripts/build-native.mjs; `TENSORBUS_SHM=0` turns it off).
   */
  sharedMemory?: boolean;
  /**
   * The data port also listens on a Unix socket, and connections to a data
   * port of this host (same host id) go through its socket when it is this
   * user's (default true, except on Windows; `TENSORBUS_UNIX_SOCKETS=0` sets
   * the default false). See unix-socket.ts.
   */
  unixSockets?: boolean;
  /**
   * Connections the data port holds at once (default 256). At the limit, a
   * new connection replaces the oldest one that has not yet sent a whole
   * request, or is refused.
   */
  maxConnections?: number;
  /**
   * Connections a requester keeps to another host's data port once large
   * replies come from it (its first one included; default 8, at most 8; 1
   * turns lanes off; anything else is an InvalidArgumentError before
   * anything connects). Replies of 1–64 MiB then go out striped over them.
   * See docs/data-plane.md.
   */
  lanes?: number;
  /** A data-port connection with nothing under way for this long is closed, ms (default 60 s). */
  idleTimeoutMs?: number;
  /** A data-port connection that has not sent a whole first request by then is closed, ms (default 5 s). */
  firstRequestTimeoutMs?: number;
  /**
   * Largest request body the data port takes (default: the transport's
   * `maxTransferBytes`); a connection that declares more is dropped.
   */
  maxRequestBytes?: number;
  /**
   * After sending a request or a reply on a direct route, keep the process's
   * event loop polling for this long, µs, so an answer that comes soon is read
   * as it lands rather than after the CPU has idled and woken again (default
   * 500; 0 turns it off; `TENSORBUS_BUSY_POLL_US` sets the default). No
   * window opens while this host's polling processes outnumber its cores,
   * and polling backs off by itself when answers come late. One setting per
   * process: the last transport started sets it. See docs/data-plane.md.
   */
  busyPollUs?: number;
}

/** Default limit of connections a data port holds at once. */
export const DEFAULT_MAX_CONNECTIONS = 256;
/** Default idle time after which a data-port connection is closed, ms. */
export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;
/** Default time a new data-port connection has to send a whole first request, ms. */
export const DEFAULT_FIRST_REQUEST_TIMEOUT_MS = 5_000;
/** A requester closes its own idle connections this much before the port would, so a request never races the port's close. */
export const CLIENT_IDLE_MARGIN = 0.75;

/** Where and what to fetch, as announced. */
export interface DirectOffer {
  hostId: string;
  host: string;
  port: number;
  token: Buffer;
}

let cachedHostId: string | undefined;

/**
 * Identifies this host, boot and network namespace, so loopback endpoints
 * (and shared memory) are used only where they mean the same machine: two
 * network namespaces of one kernel share host name and boot id, but not
 * their loopback interfaces.
 */
export function hostId(): string {
  if (cachedHostId === undefined) {
    let boot = '';
    let network = '';
    try {
      boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
      // "net:[4026531840]": the inode of this process's network namespace.
      network = readlinkSync('/proc/self/ns/net').replace(/\D/g, '');
    } catch {
      // Not Linux (or no /proc): the host name alone.
    }
    cachedHostId = `${hostname()}/${boot}/${network}`.replace(/\s/g, '_');
  }
  return cachedHostId;
}

/** A fresh unguessable token. */
export function newToken(): Buffer {
  return randomBytes(TOKEN_BYTES);
}

/** The tb-direct header value of an offer. */
export function formatOffer(offer: DirectOffer): string {
  return `${offer.hostId} ${offer.host}:${offer.port} ${offer.token.toString('hex')}`;
}

/** Parses a tb-direct header value; undefined when malformed. */
export function parseOffer(value: string | undefined): DirectOffer | undefined {
  if (!value) return undefined;
  const match = /^(\S+) (\S+):(\d{1,5}) ([0-9a-f]{32})$/.exec(value);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65_535) return undefined;
  const host = match[2]!.replace(/^\[|\]$/g, '');
  if (!connectable(host)) return undefined;
  return { hostId: match[1]!, host, port, token: Buffer.from(match[4]!, 'hex') };
}

/**
 * True for an address a data port can be reached at: a unicast IP address,
 * or a host name. Not "any" (0.0.0.0, ::), 0.0.0.0/8, broadcast or
 * multicast: an offer naming one is malformed, and nothing connects to it.
 */
export function connectable(host: string): boolean {
  const family = isIP(host);
  if (family === 4) {
    const [a] = host.split('.').map(Number) as [number];
    return a !== 0 && !(a >= 224) /* multicast 224/4, reserved 240/4, broadcast */;
  }
  if (family === 6) {
    const lower = host.toLowerCase();
    if (lower.startsWith('ff')) return false; // multicast
    // The unspecified address in any spelling (::, 0:0:…:0), and IPv4-mapped forms of the refused IPv4 ones.
    if (/^[0:]+$/.test(lower)) return false;
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
    return !mapped || connectable(mapped[1]!);
  }
  // A host name: letters, digits, dots and dashes only (nothing a resolver would read otherwise).
  return host.length <= 253 && /^[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?$/.test(host);
}

/** True for addresses that mean "this machine". */
export function isLoopback(host: string): boolean {
  return host === 'localhost' || host.startsWith('127.') || host === '::1';
}

/** True when `offer`'s endpoint means the same machine to this process as to its sender (a loopback only on the same host). */
export function reachableFromHere(offer: DirectOffer): boolean {
  return !(isLoopback(offer.host) && offer.hostId !== hostId());
}
