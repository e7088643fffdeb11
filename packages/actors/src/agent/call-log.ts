/**
 * The callee's log of calls that failed: one line per failure (worker,
 * function, caller, error), as PyTorch prints a remote function's exception
 * on the worker that ran it. Only failures of the function itself are
 * logged: a call refused (unknown function or method, a sender that cannot
 * be checked, bytes that do not decode, an unknown RRef or context, a peer
 * over its bounds) is its sender's to fix, and is answered, not logged. At most {@link LINES_PER_SECOND} lines a second, then
 * one line counting the rest, so a peer cannot flood the log.
 * @module
 */
import { TensorbusError } from '@tensorbus/core';
import { envVar, writeErrorLine, unrefTimer } from '../platform/process.js';

/**
 * Codes of the errors that refuse a call rather than report a failure of the
 * function: what the caller asked for does not exist here (a function, a
 * method, an RRef, a context), is over its bounds, or came malformed. The
 * caller gets them; logging them would let a peer fill the callee's log.
 */
const REFUSALS = new Set([
  'UNKNOWN_FUNCTION',
  'SHUTDOWN',
  'PERMISSION_DENIED',
  'RREF_OWNER_LOST',
  'RREF_LIMIT_EXCEEDED',
  'RREF_CREATION_FAILED',
  'RREF_RELEASED',
  'AUTOGRAD_LIMIT_EXCEEDED',
  'AUTOGRAD_CONTEXT_NOT_FOUND',
  'STREAM_LIMIT_EXCEEDED',
  'REENTRANT_CALL',
]);

/** True when `error` refuses the call (see {@link REFUSALS}): answered, never logged. */
export function isRefusal(error: unknown): boolean {
  return error instanceof TensorbusError && REFUSALS.has(error.code);
}

/**
 * Where a worker writes its log lines: anything console-compatible
 * (`console` itself, a pino or winston logger, `{ error: (line) => … }`).
 */
export interface TensorbusLogger {
  error(message: string): void;
}

/** Lines a worker writes per second at most; further failures in that second are counted in one line. */
export const LINES_PER_SECOND = 10;
/** Longest error text in one line (a longer message is cut). */
const MAX_TEXT = 500;

/** The default logger: one line to stderr, unless TENSORBUS_QUIET=1 (as the repository's CI sets it). */
export function defaultLogger(): TensorbusLogger | undefined {
  if (envVar('TENSORBUS_QUIET') === '1') return undefined;
  return { error: writeErrorLine };
}

/** One line of text for `value`, cut to `max` characters. */
function oneLine(value: string, max: number): string {
  const flat = value.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

/** `Name: message` of an error, on one line. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return oneLine(`${error.name}: ${error.message}`, MAX_TEXT);
  let text: string;
  try {
    text = String(error);
  } catch {
    text = typeof error;
  }
  return oneLine(`thrown ${text}`, MAX_TEXT);
}

/** The failures of one worker's calls, written to its logger. */
export class CallLog {
  private windowStart = 0;
  private written = 0;
  private unwritten = 0;
  private flush: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly worker: string,
    private readonly logger: TensorbusLogger | undefined,
  ) {}

  /** Logs that `what` (a function, or a method) called by `caller` failed with `error`. */
  failed(what: string, caller: string, error: unknown): void {
    if (this.logger === undefined) return;
    const now = Date.now();
    if (now - this.windowStart >= 1_000) {
      this.writeUnwritten();
      this.windowStart = now;
      this.written = 0;
    }
    if (this.written >= LINES_PER_SECOND) {
      this.unwritten++;
      // The count is written when the second is over, even if no failure follows.
      this.flush ??= unrefTimer(setTimeout(() => this.writeUnwritten(), this.windowStart + 1_000 - now));
      return;
    }
    this.written++;
    this.write(`[tensorbus] worker '${this.worker}': ${what} called by '${oneLine(caller, 128)}' failed: ${describeError(error)}`);
  }

  /** Stops the pending count line (the agent stopped); the count is written now. */
  close(): void {
    this.writeUnwritten();
  }

  private writeUnwritten(): void {
    if (this.flush !== undefined) clearTimeout(this.flush);
    this.flush = undefined;
    if (this.unwritten === 0) return;
    const n = this.unwritten;
    this.unwritten = 0;
    this.write(`[tensorbus] worker '${this.worker}': ${n} more failed call${n === 1 ? '' : 's'} not logged (at most ${LINES_PER_SECOND} lines a second)`);
  }

  private write(line: string): void {
    try {
      this.logger!.error(line);
    } catch {
      // A logger that throws must not fail the call or the worker.
    }
  }
}
