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

// For @tensorbus/gateway and @tensorbus/dashboard, which run on these.
export { describeError, defaultLogger } from './agent/call-log.js';
export { loadNatsTransport } from './nats-loader.js';
export type { NatsConnectOptions } from './nats-loader.js';
export { listRegistry } from './registry/registry-list.js';
export type { RegisteredSummary } from './registry/functions.js';
export { tfOpByName, tfOpNames } from './registry/tf-builtins.js';
export { MemberWitness } from './observe/member-witness.js';
export { listWorkers, queryStats } from './observe/stats-reader.js';
export { DASHBOARD_PORT } from './cli/args.js';
export type { GatewayArgs, DashboardArgs } from './cli/args.js';
export type { GatewayCommandModule, DashboardCommandModule, RunningDashboard, DashboardTarget } from './cli/command-packages.js';
export { untilSignal } from './cli/until-signal.js';
export { connectReader } from './cli/status.js';
// The membership and stats wire, for tests of those packages that play a peer which is not a member.
export { Identity } from './agent/identity.js';
export { signedText } from './membership/heartbeat-beat.js';
export { HERE, QUERY } from './membership/membership-protocol.js';
export { nonceOf, statsSignedText } from './observe/stats-protocol.js';
export { decodeWithoutTensors } from './tensors.js';
