/**
 * The raw NATS peer's responder process: answers every request on the echo
 * subject with its payload, with the `nats` client and nothing else.
 * @module
 */
import { connect } from 'nats';
import { serveCommands } from '../process/child-channel.js';
import { NATS_ECHO_SUBJECT } from './nats-raw-protocol.js';

const connection = await connect({ servers: process.env.NATS_URL!, name: 'bench-raw-responder' });
const subscription = connection.subscribe(NATS_ECHO_SUBJECT);
void (async () => {
  for await (const message of subscription) message.respond(message.data);
})();
await connection.flush();

serveCommands({}, { pid: process.pid }, () => connection.close());
