/**
 * What a worker reads from its process, on Node: environment variables,
 * stderr, warnings, pid, host name, memory, and `setImmediate`. A page's
 * bundle takes process.browser.ts instead (the package's "browser" field).
 * @module
 */
import { hostname as osHostname } from 'node:os';

/** The environment variable `name`; undefined where it is unset. */
export function envVar(name: string): string | undefined {
  return process.env[name];
}

/** Writes `line` and a newline to stderr. */
export function writeErrorLine(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Emits a process warning (printed once by Node's default handler). */
export function emitWarning(text: string): void {
  process.emitWarning(text);
}

/** This process's id. */
export function processId(): number {
  return process.pid;
}

/** This machine's host name. */
export function hostname(): string {
  return osHostname();
}

/** The process's resident set and JavaScript heap in use, bytes. */
export function memoryUsage(): { rss: number; heapUsed: number } {
  return process.memoryUsage();
}

/** Runs `fn` after the current I/O callbacks (Node's `setImmediate`). */
export const nextTurn: (fn: () => void) => void = setImmediate;

/** `timer`, made not to keep the process alive. */
export function unrefTimer<T extends { unref(): unknown }>(timer: T): T {
  timer.unref();
  return timer;
}
