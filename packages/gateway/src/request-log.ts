/**
 * One line per request: client, method, worker, duration, outcome (and the
 * retries it took), so an operator sees which endpoint misbehaves.
 * @module
 */
import { defaultLogger } from '@tensorbus/actors/internal';

/** Where the gateway writes its lines (console-compatible: `console` works). */
export interface GatewayLogger {
  info(line: string): void;
}

/** What one request did. */
export interface RequestRecord {
  client: string;
  method: string;
  worker: string | undefined;
  ms: number;
  /** `ok`, `fault <faultCode> <code>`, or `refused <http status>`. */
  outcome: string;
  retries: number;
}

/** The line of `record`. Values from the request are quoted (JSON) so they cannot fake fields or lines. */
export function formatRecord(record: RequestRecord): string {
  const retries = record.retries > 0 ? ` retries=${record.retries}` : '';
  return `gateway: client=${JSON.stringify(record.client)} method=${JSON.stringify(record.method)} worker=${record.worker === undefined ? '-' : JSON.stringify(record.worker)} ms=${record.ms.toFixed(1)} outcome=${record.outcome}${retries}`;
}

/** The default logger: stderr, silent when TENSORBUS_QUIET=1. */
export function defaultGatewayLogger(): GatewayLogger | undefined {
  const stderr = defaultLogger();
  return stderr && { info: (line) => stderr.error(line) };
}
