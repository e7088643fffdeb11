/**
 * A data port's second door for the processes of its own host: a Unix
 * socket beside the TCP port, speaking the same protocol. A message through
 * it skips the TCP/IP stack of loopback (segments, acknowledgements, the
 * softirq that delivers them), so a small call costs both processes less CPU
 * (docs/experiments/data-plane.md, "unix-socket").
 *
 * Nothing new is announced. An offer names its host (`hostId`: host name,
 * boot and network namespace) and its port; a requester whose own host id is
 * the offer's finds the socket by name: `<folder>/<host tag>-<port>.sock`,
 * where the folder is this user's (`tensorbus-ports-<uid>` in the temporary
 * directory, mode 0700, see private-folder.ts) and the tag a digest of the
 * host id (network namespaces of one kernel share the folder, not their
 * ports). It is used only when it is a socket owned by this user; otherwise,
 * and for every other host, the requester connects over TCP as before. So
 * only processes of the same user meet this way; others take TCP.
 *
 * The port listens on it from its start, when the folder is private and the
 * path fits a socket address; a socket file found there was left by a
 * process killed while it held this same TCP port (which this process holds
 * now), and is replaced. It is removed when the port closes or the process
 * exits; a process killed by a signal leaves its socket, so a port that
 * starts also removes the sockets of its host tag that nothing listens on
 * (not in this network namespace's `/proc/net/unix`; one bound in the
 * instant between its file's creation and its listing would lose its file,
 * and its peers would connect over TCP). `direct: { unixSockets: false }`
 * (or `TENSORBUS_UNIX_SOCKETS=0` for the default) keeps a transport on TCP
 * both ways.
 * @module
 */
import { createHash } from 'node:crypto';
import { lstatSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadShm } from '../shm/shm-native.js';
import { socketFd, unixSocketPeer, type PeerProcess } from '../shm/socket-peer.js';
import { hostId, type DirectOffer } from './direct-protocol.js';
import { privateFolder, userId } from './private-folder.js';

/**
 * Send buffer asked for on each end of a connection through a Unix socket,
 * bytes: the default (net.core.wmem_default, commonly 208 KiB) makes a frame
 * of a few hundred KiB cross in several wakeups of both sides, where TCP
 * loopback's buffers grow to 4 MiB. The kernel caps it at net.core.wmem_max.
 */
const SEND_BUFFER_BYTES = 4 * 2 ** 20;

/** Mode bits the socket folder must not have: nobody but this user may enter it. */
const FOLDER_FORBIDDEN = 0o077;
/** Longest socket path taken, bytes (a socket address holds 104 on macOS and 108 on Linux, with its NUL). */
const MAX_PATH_BYTES = 103;

/** Whether transports use Unix sockets when their options do not say: yes, unless on Windows or `TENSORBUS_UNIX_SOCKETS=0`. */
export function unixSocketsByDefault(): boolean {
  return process.platform !== 'win32' && process.env.TENSORBUS_UNIX_SOCKETS !== '0';
}

/** This user's folder of data-port sockets. */
export function socketFolder(): string {
  return join(tmpdir(), `tensorbus-ports-${userId() ?? 'user'}`);
}

let hostTag: string | undefined;

/** The socket path of data port `port` of this host in `dir`; undefined when it would not fit a socket address. */
export function unixSocketPath(port: number, dir: string = socketFolder()): string | undefined {
  hostTag ??= createHash('sha256').update(hostId()).digest('hex').slice(0, 16);
  const path = join(dir, `${hostTag}-${port}.sock`);
  return Buffer.byteLength(path) <= MAX_PATH_BYTES ? path : undefined;
}

/**
 * Removes the sockets of this host's tag in `dir` (but `own`) that no
 * socket of this network namespace is bound to: left by processes killed
 * by a signal. Only sockets of this user are touched; on any failure to
 * read what is bound, nothing is.
 */
function removeDeadSockets(dir: string, own: string): void {
  let bound: Set<string>;
  let names: string[];
  try {
    // "Num RefCount Protocol Flags Type St Inode Path": the path, when bound to one, is the 8th field.
    bound = new Set(readFileSync('/proc/net/unix', 'latin1').split('\n').slice(1).map((line) => line.trim().split(/\s+/)[7]).filter((path): path is string => path !== undefined));
    names = readdirSync(dir);
  } catch {
    return;
  }
  const prefix = `${hostTag}-`;
  const uid = userId();
  for (const name of names) {
    const path = join(dir, name);
    if (!name.startsWith(prefix) || !name.endsWith('.sock') || path === own || bound.has(path)) continue;
    try {
      const entry = lstatSync(path);
      if (entry.isSocket() && entry.uid === (uid ?? entry.uid)) unlinkSync(path);
    } catch {
      // Gone meanwhile.
    }
  }
}

/** Sockets this process listens on, removed at its exit. */
const listening = new Set<string>();
let removeAtExit = false;

/**
 * Listens on the Unix socket of TCP port `port` (which this process holds),
 * handing each connection to `onConnection`; resolves with the server, or
 * undefined when it cannot (the port then has TCP alone).
 */
export async function listenUnixSocket(port: number, onConnection: (socket: Socket) => void, dir: string = socketFolder()): Promise<Server | undefined> {
  const path = unixSocketPath(port, dir);
  if (path === undefined || !privateFolder(dir, FOLDER_FORBIDDEN, true)) return undefined;
  try {
    // Left by a process killed while it held this port; anything but a socket stays, and listening fails.
    if (lstatSync(path).isSocket()) unlinkSync(path);
  } catch {
    // Nothing there.
  }
  removeDeadSockets(dir, path);
  const server = createServer(onConnection);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(path, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch {
    server.close();
    return undefined;
  }
  server.on('error', () => undefined);
  // Closing the server removes the file; the set covers an exit without a close.
  server.once('close', () => listening.delete(path));
  server.unref();
  listening.add(path);
  if (!removeAtExit) {
    removeAtExit = true;
    process.once('exit', () => {
      for (const left of listening) {
        try {
          unlinkSync(left);
        } catch {
          // Already gone.
        }
      }
    });
  }
  return server;
}

/**
 * The Unix socket to reach `offer`'s data port through: only when the offer
 * names this host and the socket is this user's, in this user's folder;
 * otherwise undefined (connect over TCP).
 */
export function unixSocketFor(offer: DirectOffer, dir: string = socketFolder()): string | undefined {
  if (offer.hostId !== hostId()) return undefined;
  const path = unixSocketPath(offer.port, dir);
  if (path === undefined || !privateFolder(dir, FOLDER_FORBIDDEN, false)) return undefined;
  try {
    const entry = lstatSync(path);
    return entry.isSocket() && entry.uid === (userId() ?? entry.uid) ? path : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Sets up either end of a connection through a Unix socket as it opens:
 * asks for {@link SEND_BUFFER_BYTES} of send buffer (with the addon;
 * otherwise it keeps the default), and returns the process the kernel says
 * made the other end, read now while it surely still runs (null when it
 * cannot be read): shared-memory references on the connection are checked
 * against it (socket-peer.ts).
 */
export function unixSocketOpened(socket: Socket): PeerProcess | null {
  const fd = socketFd(socket);
  const binding = loadShm().binding;
  if (fd !== undefined && binding !== undefined) {
    try {
      binding.sendBuffer(fd, SEND_BUFFER_BYTES);
    } catch {
      // Kept at the default.
    }
  }
  return unixSocketPeer(socket) ?? null;
}
