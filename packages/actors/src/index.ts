/**
 * @tensorbus/actors: workers as named actors on a bus, calls, streams,
 * membership and shutdown [torch.distributed.rpc].
 * @module
 */
// Loads `tb.registry.list` on every worker (what the XML-RPC gateway lists).
import './registry/registry-list.js';

// Workers
export { initRpc, currentAgent } from './init.js';
export { RpcAgent } from './agent/rpc-agent.js';
export type { WorkerRef, ShutdownOptions, RemoteResult, RemoteArgs } from './agent/rpc-agent.js';
export type { InitRpcOptions } from './agent/options.js';
export type { TensorbusLogger } from './agent/call-log.js';
export type { PeerLimits } from './peer-limits.js';
export { DEFAULT_PEER_LIMITS } from './peer-limits.js';
export type { WorkerInfo } from './worker-info.js';

// Remote references
export { RRef } from './rref/rref.js';
export type { SyncProxy, AsyncProxy, RemoteProxy } from './rref/rref.js';
export type { Received } from './received.js';
export type { RRefStats } from './rref/rref-manager.js';

// Distributed autograd
export type { DistAutograd, ContextId, BackwardOptions } from './autograd/dist-autograd.js';

// Distributed optimizer and remote modules
export { DistributedOptimizer } from './optim/dist-optimizer.js';
export type { OptimizerName, OptimizerOptions } from './optim/optimizers.js';
export { RemoteModule } from './remote-module/remote-module.js';
export type { Module } from './remote-module/remote-module.js';

// Calls
export { remoteFunction, remoteClass } from './registry/functions.js';
export type { RegistryListing } from './registry/registry-list.js';
export type { RemoteFunction, RemoteClass, Callable, RemoteFunctionOptions, RemoteClassOptions } from './registry/functions.js';
export type { RemoteOptions } from './rref/supervised.js';
export type { Checkpointable, ObjectCheckpointStore } from './rref/object-checkpoints.js';
export type { CallOptions } from './agent/host.js';
export type { StreamOptions } from './streams/stream-consumer.js';
export { RpcStream } from './streams/rpc-stream.js';
export { concatMapStream } from './streams/concat-map-stream.js';

// Observing (docs/observability.md)
export { reportStat } from './observe/report-stat.js';
export { refreshObservability } from './observe/switch.js';
export { checkWorkerStats } from './observe/stats-protocol.js';
export type { WorkerStats, FunctionStats } from './observe/stats-protocol.js';

// Profiling
export { RpcProfile } from './agent/profiler.js';
export type { RpcEvent, ProfileOptions, ChromeTraceEvent } from './agent/profiler.js';

