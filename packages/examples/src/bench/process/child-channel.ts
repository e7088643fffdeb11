/**
 * The child side of the benchmark's control channel: every process the
 * benchmark starts (callers, callees, echo servers) reads commands as JSON
 * lines on stdin and answers on stdout with lines starting `@bench `, so
 * whatever else a process prints (logs) cannot be mistaken for an answer.
 * Timing happens inside the child; the channel only carries the results.
 * @module
 */
import { createInterface } from 'node:readline';

/** Marks protocol lines on stdout. */
export const PROTOCOL_PREFIX = '@bench ';

/** A command from the parent. */
export interface Command {
  id: number;
  op: string;
  params?: Record<string, unknown>;
}

/** What a child does for each `op`; the result must be JSON-serialisable. */
export type Handlers = Record<string, (params: Record<string, unknown>) => Promise<unknown> | unknown>;

function send(message: object): void {
  process.stdout.write(`${PROTOCOL_PREFIX}${JSON.stringify(message)}\n`);
}

/**
 * Tells the parent this process is ready (with `info`, e.g. a port), then
 * serves commands one at a time until `exit` (which runs `onExit` first) or
 * until stdin closes (the parent is gone).
 */
export function serveCommands(handlers: Handlers, info: object = {}, onExit: () => Promise<void> | void = () => undefined): void {
  const lines = createInterface({ input: process.stdin });
  let queue: Promise<void> = Promise.resolve();
  const exit = async (code: number) => {
    try {
      await onExit();
    } finally {
      process.exit(code);
    }
  };
  lines.on('line', (line) => {
    if (!line.trim()) return;
    const command = JSON.parse(line) as Command;
    queue = queue.then(async () => {
      if (command.op === 'exit') {
        send({ id: command.id, result: null });
        await exit(0);
        return;
      }
      const handler = handlers[command.op];
      try {
        if (!handler) throw new Error(`unknown command '${command.op}'`);
        send({ id: command.id, result: (await handler(command.params ?? {})) ?? null });
      } catch (error) {
        send({ id: command.id, error: error instanceof Error ? `${error.message}` : String(error) });
      }
    });
  });
  lines.on('close', () => void queue.then(() => exit(0)));
  send({ ready: true, info });
}

/** Reads `--flag value` from this process's arguments. */
export function argValue(flag: string, fallback?: string): string {
  const argv = process.argv;
  const i = argv.indexOf(flag);
  const value = i >= 0 ? argv[i + 1] : undefined;
  if (value !== undefined) return value;
  if (fallback !== undefined) return fallback;
  throw new Error(`missing ${flag}`);
}

/** The NATS namespace of a tensorbus system's processes (`TENSORBUS_BENCH_NAMESPACE`; two systems on one server need two). */
export function namespaceOption(): { namespace?: string } {
  const namespace = process.env.TENSORBUS_BENCH_NAMESPACE;
  return namespace ? { namespace } : {};
}

/**
 * How long a tensorbus process of the bench waits for a silent member before
 * declaring it failed (`TENSORBUS_BENCH_FAILURE_TIMEOUT_MS`, whole ms); the
 * agent's default when unset. Throws on any other value.
 */
export function failureTimeoutOption(): { failureTimeoutMs?: number } {
  const text = process.env.TENSORBUS_BENCH_FAILURE_TIMEOUT_MS;
  if (text === undefined || text === '') return {};
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms <= 0) throw new Error(`TENSORBUS_BENCH_FAILURE_TIMEOUT_MS must be a positive whole number of ms, not '${text}'`);
  return { failureTimeoutMs: ms };
}

/**
 * The data-port options of a tensorbus process of the bench: between two
 * hosts, its host's address on the veth pair (`TENSORBUS_BENCH_DIRECT_HOST`),
 * listened on and advertised; by default the transport's own (loopback); no
 * data port at all with `TENSORBUS_BENCH_BUS_ONLY=1`; `direct.lanes` from
 * `TENSORBUS_BENCH_LANES` (the lanes experiment's switch).
 */
export function directOptions(): { direct?: { host?: string; lanes?: number } | false } {
  // The bench's bus-only systems (TENSORBUS_BENCH_BUS_ONLY=1): every call through the nats-server.
  if (process.env.TENSORBUS_BENCH_BUS_ONLY === '1') return { direct: false };
  const host = process.env.TENSORBUS_BENCH_DIRECT_HOST;
  const lanes = process.env.TENSORBUS_BENCH_LANES;
  if (!host && !lanes) return {};
  return { direct: { ...(host ? { host } : {}), ...(lanes ? { lanes: Number(lanes) } : {}) } };
}
