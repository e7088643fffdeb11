/**
 * Which process is at the other end of a connection of this host: the
 * proof a shared-memory reference needs before its segment is mapped.
 *
 * A reference names a pid and a descriptor, and the receiver opens
 * `/proc/<pid>/fd/<fd>` with its own privileges. Unchecked, any process that
 * can reach a data port (and holds a route token) could make the receiver map
 * a third process's memory and act on it: a confused deputy. So the receiver
 * finds the peer's socket in `/proc/net/tcp{,6}` (the one whose local address
 * is this connection's remote one and the other way round; those tables show
 * this network namespace only), and accepts the pid only if
 * `/proc/<pid>/fd` holds that very socket. On a Unix socket (unix-socket.ts)
 * the kernel says who made the other end (SO_PEERCRED, through the addon),
 * read as the connection opens with that process's start time; a pid is
 * accepted only if it is that process, still running (same start time: a
 * pid reused since is not). Whatever cannot be shown is refused. See
 * docs/data-plane.md.
 * @module
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { isIPv4, type Socket } from 'node:net';
import { endianness } from 'node:os';
import { loadShm } from './shm-native.js';

/** The two ends of a connection, as a Node socket reports them. */
export interface SocketEnds {
  readonly localAddress?: string;
  readonly localPort?: number;
  readonly remoteAddress?: string;
  readonly remotePort?: number;
}

/** A process shown to hold the other end of a connection. */
export interface PeerProcess {
  readonly pid: number;
  /** Owner of the peer's socket (the user the process ran as when it made it). */
  readonly uid: number;
  /** Start time of the process (clock ticks since boot): tells a reused pid apart. */
  readonly startTime: string;
}

const V4_MAPPED = '00000000000000000000ffff';

/** 16 bytes of an IPv6 text address (IPv4-mapped tails included), as hex; undefined when malformed. */
function ipv6Hex(text: string): string | undefined {
  let address = text.replace(/%.*$/, '');
  const v4Tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (v4Tail) {
    const bytes = v4Tail[1]!.split('.').map(Number);
    const hex = bytes.map((b) => b.toString(16).padStart(2, '0')).join('');
    address = `${address.slice(0, -v4Tail[1]!.length)}${hex.slice(0, 4)}:${hex.slice(4)}`;
  }
  const halves = address.split('::');
  if (halves.length > 2) return undefined;
  const head = halves[0] ? halves[0].split(':') : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - tail.length;
  if (missing < 0 || (halves.length === 1 && missing !== 0)) return undefined;
  const groups = [...head, ...Array<string>(missing).fill('0'), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  return groups.map((g) => g.toLowerCase().padStart(4, '0')).join('');
}

/** An address as 16 bytes of hex (IPv4 as IPv4-mapped IPv6), so both tables compare alike. */
function normalAddress(text: string | undefined): string | undefined {
  if (!text) return undefined;
  if (isIPv4(text)) return V4_MAPPED + Buffer.from(text.split('.').map(Number)).toString('hex');
  return ipv6Hex(text);
}

/** An address of /proc/net/tcp{,6} ("0100007F:898B": 32-bit words in host order, then the port) as `normalAddress:port`. */
function procEndpoint(field: string): string | undefined {
  const [hex, port] = field.split(':');
  if (!hex || !port || (hex.length !== 8 && hex.length !== 32)) return undefined;
  const bytes = Buffer.from(hex, 'hex');
  // Each 32-bit word was printed as a host-order integer: on little-endian hosts its bytes are reversed.
  if (endianness() === 'LE') for (let i = 0; i < bytes.length; i += 4) bytes.subarray(i, i + 4).reverse();
  const address = bytes.length === 4 ? V4_MAPPED + bytes.toString('hex') : bytes.toString('hex');
  return `${address}:${parseInt(port, 16)}`;
}

/** The peer's socket of a connection with these ends: its inode and owner, or undefined when not in this namespace's tables. */
export function peerSocket(ends: SocketEnds): { inode: string; uid: number } | undefined {
  const local = normalAddress(ends.localAddress);
  const remote = normalAddress(ends.remoteAddress);
  if (!local || !remote || !ends.localPort || !ends.remotePort) return undefined;
  // The peer's socket is the one that sees this connection the other way round.
  const wantLocal = `${remote}:${ends.remotePort}`;
  const wantRemote = `${local}:${ends.localPort}`;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'latin1');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || procEndpoint(fields[1]!) !== wantLocal || procEndpoint(fields[2]!) !== wantRemote) continue;
      const uid = Number(fields[7]);
      const inode = fields[9]!;
      if (!Number.isSafeInteger(uid) || !/^[1-9]\d*$/.test(inode)) return undefined;
      return { inode, uid };
    }
  }
  return undefined;
}

/** True when process `pid` has the socket `inode` among its descriptors (false when it cannot be seen). */
export function holdsSocket(pid: number, inode: string): boolean {
  const want = `socket:[${inode}]`;
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === want) return true;
    } catch {
      // Closed meanwhile.
    }
  }
  return false;
}

/** Start time of process `pid` (field 22 of /proc/<pid>/stat), or undefined when it is gone. */
export function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** The descriptor of an open Node socket (undefined where Node does not say). */
export function socketFd(socket: Socket): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}

/**
 * The process that made the other end of the connected Unix socket `socket`
 * (the kernel's record, SO_PEERCRED), with its start time; undefined
 * without the addon or when it is gone. Read as the connection opens.
 */
export function unixSocketPeer(socket: Socket): PeerProcess | undefined {
  const binding = loadShm().binding;
  const fd = socketFd(socket);
  if (binding === undefined || fd === undefined) return undefined;
  try {
    const [pid, uid] = binding.peer(fd);
    const startTime = startTimeOf(pid);
    return startTime === undefined ? undefined : { pid, uid, startTime };
  } catch {
    return undefined;
  }
}

/**
 * Process `pid` as the peer of the connection with `ends`, or undefined when
 * it cannot be shown to hold the other end (another process, another
 * network namespace, a pid this process may not inspect). A connection
 * through a Unix socket gives `unixPeer`, what {@link unixSocketPeer} read
 * as it opened (null: nothing could be read): `pid` must be that process,
 * still running.
 */
export function provePeer(ends: SocketEnds, pid: number, unixPeer?: PeerProcess | null): PeerProcess | undefined {
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  if (unixPeer !== undefined) return unixPeer !== null && unixPeer.pid === pid && startTimeOf(pid) === unixPeer.startTime ? unixPeer : undefined;
  const socket = peerSocket(ends);
  if (!socket) return undefined;
  const startTime = startTimeOf(pid);
  // Checked after the start time: a pid reused in between would not hold this socket.
  if (!startTime || !holdsSocket(pid, socket.inode)) return undefined;
  return { pid, uid: socket.uid, startTime };
}
