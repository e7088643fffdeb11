/**
 * Finds the nats-server binary: `NATS_SERVER_BIN`, then `PATH`, then the
 * places Debian and manual installs put it.
 * @module
 */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** What to tell a user who has no nats-server. */
export const INSTALL_HINT =
  'nats-server was not found. Install it (Debian/Ubuntu: `sudo apt-get install -y nats-server`; ' +
  'elsewhere: a release from the NATS project put on PATH), or set NATS_SERVER_BIN to its path.';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The path of the executable `name` on `PATH` or in the usual system directories, or undefined. */
export function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/bin', '/usr/local/bin', '/usr/local/sbin', '/bin', '/sbin'];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, name);
    if (executable(candidate)) return candidate;
  }
  return undefined;
}

/** The path of nats-server, or undefined when there is none. */
export function findNatsServer(): string | undefined {
  const explicit = process.env.NATS_SERVER_BIN;
  if (explicit) return executable(explicit) ? explicit : undefined;
  return findExecutable('nats-server');
}
