/**
 * A worker process of the gateway example: joins the namespace from its
 * environment (TENSORBUS_NAME, NATS_URL, TENSORBUS_NAMESPACE) with the
 * example's functions registered, says `ready`, and serves until stopped.
 * @module
 */
import { initRpc } from '@tensorbus/actors';
import './functions.js';

const agent = await initRpc();
console.log(`ready ${agent.self.name}`);
const stop = () => void agent.shutdown({ graceful: false }).finally(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
