/**
 * Everything of @tensorbus/actors, for sibling packages and tests. Not a
 * public API.
 * @module
 */
export * from './index.js';
export { callScope, PluginKey, servingPlugin } from './agent/host.js';
export type { AgentHost, CallScope, MetaContributor, WireContext, CallTap, CallWrapper, ProtocolPlugin, PluginLifecycle, MembersView } from './agent/host.js';
export type { CallMeta, CallerIdentity } from './agent/call-context.js';
export { hostOf } from './agent/rpc-agent.js';
export { WorkerHost, type AnyPlugin } from './agent/agent-host.js';
export { startAgent } from './init.js';
export { resolveOptions } from './agent/options.js';
export { membershipPlugin } from './membership/plugin.js';
export { MEMBERSHIP } from './membership/plugin.js';
export { SHUTDOWN } from './shutdown/plugin.js';
export { STREAMS } from './streams/plugin.js';
export { RREFS } from './rref/plugin.js';
export { AUTOGRAD } from './autograd/plugin.js';
export { forEachTensor, disposeTransient, isTransient } from './tensors.js';
export { lookupCallable, callableName } from './registry/functions.js';
export { validateWorkerName, WORKER_NAME_PATTERN } from './worker-info.js';
export * from './agent/subjects.js';
export { recordingScope, withoutRecording, openContextCount } from './autograd/tape.js';
export { CallTensors, collectTensors, outsideCalls, madeByCurrentCall } from './agent/call-tensors.js';
export { OBSERVE } from './observe/plugin.js';
export { observing } from './observe/switch.js';
export { parseTraceparent, formatTraceparent } from './observe/trace-context.js';
