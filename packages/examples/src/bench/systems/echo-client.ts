/**
 * What every byte-echo peer's client process serves: round trips of each
 * size, and calls per second with a window in flight, over its own `echo`.
 * @module
 */
import { serveCommands } from '../process/child-channel.js';
import { timeCalls, windowRate, type LatencyPlan, type RatePlan } from '../stats.js';

/** Serves the `latency` and `rate` commands with `echo`; `close` runs when the bench is done. */
export function serveEchoClient(echo: (payload: Buffer) => Promise<Buffer>, close: () => void): void {
  const latency = (bytes: number, plan: LatencyPlan) => {
    const payload = Buffer.alloc(bytes);
    return timeCalls(async () => {
      const reply = await echo(payload);
      if (reply.length !== bytes) throw new Error(`echo returned ${reply.length} bytes, sent ${bytes}`);
    }, plan);
  };
  serveCommands(
    {
      latency: (p) => latency(Number(p.bytes), p.plan as LatencyPlan),
      rate: (p) => windowRate(() => echo(Buffer.alloc(8)), p.plan as RatePlan),
    },
    { pid: process.pid },
    close,
  );
}
