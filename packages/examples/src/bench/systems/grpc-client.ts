/**
 * The gRPC-js peer's client process: unary round trips with raw-bytes
 * payloads of each size, and calls per second with a window in flight, on
 * one channel to the server at `--port`.
 * @module
 */
import { credentials, makeGenericClientConstructor, type Client, type ServiceError } from '@grpc/grpc-js';
import { argValue } from '../process/child-channel.js';
import { serveEchoClient } from './echo-client.js';
import { ECHO_SERVICE, UNLIMITED } from './grpc-echo-service.js';

type EchoClient = Client & { echo(request: Buffer, callback: (error: ServiceError | null, reply?: Buffer) => void): void };

const EchoClientClass = makeGenericClientConstructor(ECHO_SERVICE, 'Echo');
const client = new EchoClientClass(`127.0.0.1:${argValue('--port')}`, credentials.createInsecure(), UNLIMITED) as unknown as EchoClient;

function echo(payload: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => client.echo(payload, (error, reply) => (error ? reject(error) : resolve(reply!))));
}

serveEchoClient(echo, () => client.close());
