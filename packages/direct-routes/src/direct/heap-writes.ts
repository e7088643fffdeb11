/**
 * Whether this process may hand the kernel views of the WASM heap and let a
 * socket write from them after other code has run (`DeferredBytes.views`).
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
 * @module
 */
import { readFileSync } from 'node:fs';

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
