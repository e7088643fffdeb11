/**
 * Everything of @tensorbus/actors, for sibling packages and tests. Not a
 * public API.
 * @module
 */
export * from './index.js';
export { callScope } from './agent/call-context.js';
export type { CallScope, CallMeta, CallerIdentity } from './agent/call-context.js';
export type { MetaContributor } from './agent/rpc-agent.js';
export type { WireContext } from './agent/call-client.js';
export { forEachTensor, disposeTransient, isTransient } from './tensors.js';
export { lookupCallable, callableName } from './registry/functions.js';
export { validateWorkerName, WORKER_NAME_PATTERN } from './worker-info.js';
export * from './agent/subjects.js';
export type { CallTap } from './agent/call-client.js';
export type { CallWrapper } from './agent/call-server.js';
export { recordingScope, withoutRecording, openContextCount } from './autograd/tape.js';
export { CallTensors, collectTensors, outsideCalls, madeByCurrentCall } from './agent/call-tensors.js';
