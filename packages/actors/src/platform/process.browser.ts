/**
 * The browser twin of process.ts: a page has no environment (every setting
 * takes its default), writes to the console, and reports no pid, host name
 * or resident memory (0 and 'browser').
 * @module
 */

/** A page has no environment variables. */
export function envVar(_name: string): string | undefined {
  return undefined;
}

/** Writes `line` to the console's error stream. */
export function writeErrorLine(line: string): void {
  console.error(line);
}

/** Writes `text` to the console as a warning. */
export function emitWarning(text: string): void {
  console.warn(text);
}

/** A page has no process id: 0. */
export function processId(): number {
  return 0;
}

/** A page does not know its machine's name. */
export function hostname(): string {
  return 'browser';
}

/** The JavaScript heap where Chromium says it (`performance.memory`), else 0. */
export function memoryUsage(): { rss: number; heapUsed: number } {
  const memory = (performance as { memory?: { usedJSHeapSize?: number } }).memory;
  return { rss: 0, heapUsed: memory?.usedJSHeapSize ?? 0 };
}

/** Runs `fn` on a later task (a page has no `setImmediate`). */
export const nextTurn: (fn: () => void) => void = (fn) => void setTimeout(fn, 0);

/** `timer` as it is: a page's timers keep nothing alive. */
export function unrefTimer<T>(timer: T): T {
  return timer;
}
