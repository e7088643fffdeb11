/**
 * The callee of the gateway case (gateway-case.ts): joins NATS_URL as
 * 'callee' with the benchmark's functions, says `ready`, serves until killed.
 * @module
 */
import { natsTransport } from '@tensorbus/nats-transport';
import { initRpc } from '@tensorbus/actors';
import './tensorbus-functions.js';

const agent = await initRpc({ name: 'callee', transport: natsTransport({ servers: process.env.NATS_URL!, name: 'gateway-bench-callee' }), logger: null });
console.log(`ready ${agent.self.name}`);
process.once('SIGTERM', () => void agent.shutdown({ graceful: false }).finally(() => process.exit(0)));
