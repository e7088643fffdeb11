/**
 * The gRPC-js peer's server process: the raw-bytes echo service on a free
 * loopback port, announced to the benchmark when ready.
 * @module
 */
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { serveCommands } from '../process/child-channel.js';
import { ECHO_SERVICE, UNLIMITED } from './grpc-echo-service.js';

const server = new Server(UNLIMITED);
server.addService(ECHO_SERVICE, {
  echo: (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => callback(null, call.request),
});
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
);

serveCommands({}, { pid: process.pid, port }, () => {
  server.forceShutdown();
});
