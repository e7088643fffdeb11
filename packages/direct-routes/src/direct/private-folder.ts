/**
 * Folders of the shared temporary directory that only this user may use:
 * the roster of polling processes (host-pollers.ts) and the Unix sockets of
 * data ports (unix-socket.ts). A folder made by someone else, a link, or one
 * others may write in (or, for sockets, enter) is not used: what another
 * user put there could make this process write, listen or connect through a
 * path of theirs.
 * @module
 */
import { lstatSync, mkdirSync } from 'node:fs';

/** This process's user id (undefined where the platform has none). */
export function userId(): number | undefined {
  return typeof process.getuid === 'function' ? process.getuid() : undefined;
}

/**
 * True when `dir` is a folder (not a link) owned by this user whose mode has
 * none of the bits of `forbidden`; it is made (mode 0700) when missing and
 * `create` is set. False on any failure.
 */
export function privateFolder(dir: string, forbidden: number, create: boolean): boolean {
  try {
    if (create) mkdirSync(dir, { recursive: true, mode: 0o700 });
    const folder = lstatSync(dir);
    const uid = userId() ?? folder.uid;
    return folder.isDirectory() && folder.uid === uid && (folder.mode & forbidden) === 0;
  } catch {
    return false;
  }
}
