/**
 * Socket writes from a thread of libuv's pool, for the parts of a striped
 * reply (lane-groups.ts). A write's kernel work — copying the bytes into the
 * socket and, on a veth pair, the receiving side's TCP stack as well — runs
 * in the writing thread. From the event loop's thread, the eight parts of a
 * 4 MB reply go one after another on one core; from the pool, on as many
 * cores as there are, as PyTorch's TensorPipe does with a loop thread per
 * connection (docs/experiments/data-plane.md, "pool-writes").
 *
 * The addon (native/pool_writes.c) writes what the socket's send buffer
 * takes at once and never waits for room; the frame writer hands the rest to
 * the socket as usual. It writes to a duplicate of the socket's descriptor,
 * so a socket closed meanwhile is never confused with a file that reused its
 * number. The views are of memory that stays put while another thread reads
 * it (`WRITE_FROM_HEAP`), held by the frame writer until the write is done.
 * `TENSORBUS_POOL_WRITES=0` writes from the event loop's thread (the
 * experiment's switch).
 * @module
 */
import type { Socket } from 'node:net';
import { loadAddon } from '../shm/shm-native.js';
import { WRITE_FROM_HEAP } from './heap-writes.js';

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
