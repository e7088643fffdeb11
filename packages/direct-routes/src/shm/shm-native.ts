/**
 * Loads the shared-memory addon (native/tensorbus_shm.c, built by
 * scripts/build-native.mjs). Optional: without it, or with
 * `TENSORBUS_SHM=0`, same-host transfers use TCP.
 * @module
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

/** The addon's functions. */
export interface ShmBinding {
  /** A new anonymous segment of `size` bytes: its descriptor and its memory (unmapped when collected). */
  create(size: number): [number, ArrayBuffer];
  /**
   * Maps another process's segment (through /proc/<pid>/fd/<fd>); throws
   * unless it is an anonymous memory file (memfd) owned by `uid`, of exactly
   * `size` bytes.
   */
  open(pid: number, fd: number, size: number, uid: number): ArrayBuffer;
  /** Closes a segment's descriptor. */
  close(fd: number): void;
  /** The process (pid, uid) at the other end of the connected Unix socket `fd`, as the kernel recorded it when the connection was made. */
  peer(fd: number): [number, number];
  /** Asks for a send buffer of `bytes` on socket `fd` (the kernel caps it at net.core.wmem_max). */
  sendBuffer(fd: number, bytes: number): void;
}

const ADDON_PATH = fileURLToPath(new URL('../../../native/build/tensorbus_shm.node', import.meta.url));

let loaded: { binding?: ShmBinding; reason?: string } | undefined;

/** The addon, or why it cannot be used here. */
export function loadShm(): { binding?: ShmBinding; reason?: string } {
  if (loaded) return loaded;
  if (process.env.TENSORBUS_SHM === '0') return (loaded = { reason: 'turned off (TENSORBUS_SHM=0)' });
  if (process.platform !== 'linux') return (loaded = { reason: 'shared memory needs Linux' });
  if (!existsSync(ADDON_PATH)) return (loaded = { reason: 'the addon is not built (npm run build builds it where a C compiler and Node headers exist)' });
  try {
    return (loaded = { binding: createRequire(import.meta.url)(ADDON_PATH) as ShmBinding });
  } catch (error) {
    return (loaded = { reason: `the addon does not load: ${(error as Error).message}` });
  }
}
