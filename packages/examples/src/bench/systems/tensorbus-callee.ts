/**
 * The tensorbus callee process of the benchmark: joins the NATS server at
 * NATS_URL as 'callee' and serves the benchmark's functions until told to
 * exit. Every tensorbus caller over NATS (the driver, the growth callers)
 * calls this one process.
 * @module
 */
import { natsTransport } from '@tensorbus/nats-transport';
import { initRpc } from '@tensorbus/actors';
import { directOptions, failureTimeoutOption, namespaceOption, serveCommands } from '../process/child-channel.js';
import './tensorbus-functions.js';

const agent = await initRpc({
  name: 'callee',
  transport: natsTransport({ servers: process.env.NATS_URL!, name: 'bench-callee', ...namespaceOption(), ...directOptions() }),
  rpcTimeoutMs: 120_000,
  ...failureTimeoutOption(),
});

serveCommands({}, { pid: process.pid }, async () => {
  await agent.shutdown({ timeoutMs: 10_000 }).catch(() => undefined);
});
