/**
 * Writes from memory where it lies: whether this process may hand the kernel
 * views of the WASM heap and let a socket write from them after other code
 * has run (`DeferredBytes.views`), and which writes go from libuv's pool.
 *
 * Growing a WebAssembly memory detaches its `ArrayBuffer`; whether the pages
 * under it stay where they were is V8's choice. On 64-bit hosts V8 reserves
 * the whole 32-bit address space of a memory up front (with guard regions)
 * and grows it in place, so a write still under way keeps reading the same,
 * mapped pages. Where it cannot reserve that much (a 32-bit host, or a limit
 * on the process's address space, `ulimit -v`) it may copy the memory to a
 * new place on growth and free the old one, under a write that still points
 * there: the frame writer then copies through its chunk buffers instead.
 * `TENSORBUS_WRITE_FROM_HEAP=0` always copies.
 *
 * Reads have the same condition: Node asks for the memory of a socket's next
 * read right after the previous read's callback, and reads into it later,
 * after other code ran. A reply sink's memory (tensors in the WASM heap) may
 * be handed to the socket that way only where the heap stays put; elsewhere
 * the bytes are read into a buffer of the connection's own and copied.
 *
 * The parts of a striped reply (lane-groups.ts) are written from a thread of
 * libuv's pool where this process can ({@link POOL_WRITE}). A write's kernel
 * work — copying the bytes into the socket and, on a veth pair, the
 * receiving side's TCP stack as well — runs in the writing thread: from the
 * event loop's one thread the eight parts of a 4 MB reply would go one after
 * another on one core, from the pool they go on as many as there are, as
 * PyTorch's TensorPipe writes each connection from a loop thread of its own
 * (docs/experiments/data-plane.md, "pool-writes"). The addon
 * (native/pool_writes.c) writes what the socket's send buffer takes at once
 * and never waits for room; the frame writer hands the rest to the socket.
 * It writes to a duplicate of the socket's descriptor, so a socket closed
 * meanwhile is never confused with a file that reused its number. The views
 * are of memory that stays put while another thread reads it (the condition
 * above), held by the frame writer until the write is done.
 * `TENSORBUS_POOL_WRITES=0` writes from the event loop's thread (the
 * experiment's switch).
 * @module
 */
import { readFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { loadAddon } from '../shm/shm-native.js';

/** True when the process's address space is not limited (Linux says in /proc; elsewhere none is assumed). */
function addressSpaceUnlimited(): boolean {
  if (process.platform !== 'linux') return true;
  try {
    const line = /^Max address space\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line === null || line[1] === 'unlimited';
  } catch {
    return true;
  }
}

/** True when the frame writer may write deferred frames straight from the WASM heap (see the module). */
export const WRITE_FROM_HEAP: boolean =
  process.env.TENSORBUS_WRITE_FROM_HEAP !== '0' && (process.arch === 'x64' || process.arch === 'arm64') && addressSpaceUnlimited();

/**
 * True when a socket may read into views of the WASM heap handed to it
 * before other code ran (a reply sink's memory): the same condition as
 * {@link WRITE_FROM_HEAP} (see the module).
 */
export const READ_INTO_HEAP: boolean = WRITE_FROM_HEAP;

/** Writes `views` to `fd` from the pool; `done(errno, written)` says how far it got (errno 0: no error). */
export type PoolWrite = (fd: number, views: Uint8Array[], done: (errno: number, written: number) => void) => void;

/** The most views one pool write takes (the addon's limit). */
export const POOL_WRITE_MAX_VIEWS = 64;

function poolWriter(): PoolWrite | undefined {
  if (process.env.TENSORBUS_POOL_WRITES === '0' || !WRITE_FROM_HEAP) return undefined;
  const binding = loadAddon().binding;
  const writev = binding?.writev;
  return writev && ((fd, views, done) => writev.call(binding, fd, views, done));
}

/** How this process writes from the pool, or undefined where it does not (no addon, memory that may move, turned off). */
export const POOL_WRITE: PoolWrite | undefined = poolWriter();

/** The descriptor of `socket`'s handle (Node keeps it on the handle on Unix), or undefined. */
export function socketFd(socket: Socket): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : undefined;
}
