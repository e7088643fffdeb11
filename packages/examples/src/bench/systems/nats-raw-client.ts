/**
 * The raw NATS peer's requester process: round trips of request/reply with
 * payloads of each size (the floor of any NATS transport), and requests per
 * second with a window in flight. Payloads over the server's `max_payload`
 * cannot be sent in one message and are reported as skipped.
 * @module
 */
import { connect } from 'nats';
import { argValue, serveCommands } from '../process/child-channel.js';
import { timeCalls, windowRate, type LatencyPlan, type RatePlan } from '../stats.js';
import { NATS_ECHO_SUBJECT, NATS_HEADROOM } from './nats-raw-protocol.js';

const connection = await connect({ servers: argValue('--servers', process.env.NATS_URL), name: 'bench-raw-requester' });
const maxPayload = connection.info?.max_payload ?? 1 << 20;
const timeout = 120_000;

async function latency(bytes: number, plan: LatencyPlan) {
  if (bytes + NATS_HEADROOM > maxPayload) return { skipped: `over max_payload (${maxPayload / (1 << 20)} MB)` };
  const payload = new Uint8Array(bytes);
  return timeCalls(async () => {
    const reply = await connection.request(NATS_ECHO_SUBJECT, payload, { timeout });
    if (reply.data.length !== bytes) throw new Error(`echo returned ${reply.data.length} bytes, sent ${bytes}`);
  }, plan);
}

function rate(plan: RatePlan) {
  const payload = new Uint8Array(8);
  return windowRate(() => connection.request(NATS_ECHO_SUBJECT, payload, { timeout }), plan);
}

serveCommands(
  {
    latency: (p) => latency(Number(p.bytes), p.plan as LatencyPlan),
    rate: (p) => rate(p.plan as RatePlan),
  },
  { pid: process.pid, maxPayload },
  () => connection.close(),
);
