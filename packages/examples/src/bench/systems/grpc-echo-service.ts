/**
 * The gRPC-js peer's service: one unary method whose request and response
 * are raw bytes (identity serialisers, so no protobuf cost at all), and the
 * channel options both sides use (no message size limit).
 * @module
 */
import type { ServiceDefinition } from '@grpc/grpc-js';

const raw = (bytes: Buffer): Buffer => bytes;

/** `/bench.Echo/Echo`: answers with the request's bytes. */
export const ECHO_SERVICE: ServiceDefinition = {
  echo: {
    path: '/bench.Echo/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: raw,
    requestDeserialize: raw,
    responseSerialize: raw,
    responseDeserialize: raw,
  },
};

/** No limit on message sizes (the 400 MB case), on the server and the client. */
export const UNLIMITED = { 'grpc.max_receive_message_length': -1, 'grpc.max_send_message_length': -1 };
