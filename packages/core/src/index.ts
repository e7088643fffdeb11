/**
 * @tensorbus/core: tensors, the wire format, the transport interface and the
 * in-process transport, futures, and the typed errors of tensorbus.
 * @module
 */

// Tensors
export { tf, tensorBackend, tensorBackendReason } from './tf.js';
export type { TensorBackendName } from './tf.js';

// Transports
export { localTransport } from './transport/local-transport.js';
export type { LocalTransportOptions } from './transport/local-transport.js';
export { payloadBytes, payloadFrame, RequestFailure } from './transport/transport.js';
export { Frame } from './owned-frame.js';
export type {
  Transport,
  TransportStatus,
  TransportRoute,
  Payload,
  DeferredBytes,
  FrameSink,
  RequestOptions,
  InboundMessage,
  SubscribeOptions,
  TransportSubscription,
  RequestFailureReason,
} from './transport/transport.js';
export { hasSinks, reportsRoutes, hasBeacon, isRandomAccess } from './transport/capabilities.js';
export type {
  SinkCapable,
  SinkRequestOptions,
  SinkSubscribeOptions,
  RouteReporting,
  BeaconCapable,
  BeaconSpec,
  BeaconSlot,
  RandomAccessSink,
} from './transport/capabilities.js';

// Futures
export { RpcFuture } from './rpc-future.js';

// Wire format
export { createCodec, defaultCodec, STREAM_MIN_BYTES } from './codec/codec.js';
export type { OutgoingFrame } from './codec/outgoing-frame.js';
export type { FrameDecoder } from './codec/frame-decoder.js';
export type { Codec, CodecLimits } from './codec/codec.js';
export { registerExtension } from './codec/extensions.js';
export type { CodecExtension } from './codec/extensions.js';

// Errors
export {
  TensorbusError,
  RpcTimeoutError,
  RemoteError,
  WorkerUnavailableError,
  UnknownFunctionError,
  SerializationError,
  ShutdownError,
  RRefError,
  AutogradError,
  StreamError,
  InvalidArgumentError,
  DuplicateWorkerError,
  PermissionDeniedError,
  MissingPackageError,
  TransportError,
  CheckpointError,
  ReentrantCallError,
} from './errors.js';
export type { ErrorCode, CoreErrorCode, ExtensionErrorCodes, RRefErrorCode, AutogradErrorCode, StreamErrorCode, RemoteErrorInfo, TensorbusErrorOptions, WorkerUnavailableErrorOptions } from './errors.js';
