/**
 * Everything of @tensorbus/core, for sibling packages and tests. Not a public
 * API: names here may change without notice.
 * @module
 */
export * from './index.js';
export { errorFromWire, errorToWire, remoteErrorFrom } from './error-wire.js';
export type { WireError } from './error-wire.js';
export { abortError, subjectMatches, holdPayload, writeInto } from './transport/transport.js';
export type { HeldPayload } from './transport/transport.js';
export { waitAtMost } from './wait-at-most.js';
export { OutgoingFrame, releaseOutgoing } from './codec/outgoing-frame.js';
export { EXT_TENSOR, EXT_MAP, EXT_ERROR } from './codec/codec.js';
export { HEADER_BYTES, BLOCK_ALIGN, FRAME_VERSION } from './codec/frame.js';
export { acquireFrame, useBufferSource, bufferPoolStats, POOL_MIN_BYTES } from './buffer-pool.js';
export type { BufferSource } from './buffer-pool.js';
export { Owned } from './owned.js';
export { elementBytes, tensorBytes, tensorFromBytes } from './codec/tensor-data.js';
export { letGoPinned } from './owned-frame.js';
export {
  asInnerKernel,
  backendOfTensor,
  complexOnCpu,
  gradientDepth,
  hookEngine,
  keptClone,
  kernelDepth,
  oncePerEngine,
  readTensorSync,
  shareTensorData,
  tensorFromInfo,
  wasmHeapOf,
  withActiveTape,
} from './tf-internals.js';
export type { EngineHooks, TapeNode, WasmHeap } from './tf-internals.js';
export { BACKEND_SAID_ENV } from './env.js';
