/**
 * A caller process of the growth study: hosts `--agents k` callers that each
 * call one callee with no-op round trips, one after another, for a while.
 *
 *   --system tensorbus   k tensorbus agents (one NATS connection each), calling 'callee'
 *   --system nats        k raw NATS connections, requesting the raw NATS echo responder
 *
 * Answers `run` {warmupMs, durationMs} with each caller's window.
 * @module
 */
import { connect, type NatsConnection } from 'nats';
import { natsTransport } from '@tensorbus/nats-transport';
import { initRpc, type RpcAgent } from '@tensorbus/actors';
import { argValue, serveCommands } from '../process/child-channel.js';
import { callForDuration } from '../stats.js';
import { NATS_ECHO_SUBJECT } from './nats-raw-protocol.js';
import { noop } from './tensorbus-functions.js';

const system = argValue('--system');
const count = Number(argValue('--agents'));
const prefix = argValue('--prefix');
const servers = process.env.NATS_URL!;

let calls: Array<() => Promise<unknown>>;
let close: () => Promise<void>;
if (system === 'tensorbus') {
  const agents: RpcAgent[] = await Promise.all(
    Array.from({ length: count }, (_, i) => initRpc({ name: `${prefix}-${i}`, transport: natsTransport({ servers, name: `${prefix}-${i}` }) })),
  );
  calls = agents.map((a) => () => a.rpcSync('callee', noop, []));
  close = async () => {
    await Promise.all(agents.map((a) => a.shutdown({ timeoutMs: 5_000 }).catch(() => undefined)));
  };
} else {
  const connections: NatsConnection[] = await Promise.all(Array.from({ length: count }, () => connect({ servers })));
  const empty = new Uint8Array(0);
  calls = connections.map((c) => () => c.request(NATS_ECHO_SUBJECT, empty, { timeout: 60_000 }));
  close = async () => {
    await Promise.all(connections.map((c) => c.close()));
  };
}

serveCommands(
  { run: (p) => Promise.all(calls.map((call) => callForDuration(call, Number(p.warmupMs), Number(p.durationMs)))) },
  { pid: process.pid },
  () => close(),
);
