/**
 * Options of `initRpc`, and how missing ones are read from the environment
 * (`TENSORBUS_NAME`, `TENSORBUS_RANK`, `TENSORBUS_WORLD_SIZE`, `NATS_URL`,
 * `TENSORBUS_NAMESPACE`), as the `tensorbus launch` command sets them.
 * @module
 */
import type { ObjectCheckpointStore } from '../rref/object-checkpoints.js';
import { InvalidArgumentError, localTransport, type Transport } from '@tensorbus/core';
import { natsTransportFromUrl } from '../nats-loader.js';
import { envVar } from '../platform/process.js';
import { validateWorkerName } from '../worker-info.js';
import { resolvePeerLimits, type PeerLimits } from '../peer-limits.js';
import { defaultLogger, type TensorbusLogger } from './call-log.js';

/** Timing of the membership protocol. */
export interface MembershipTiming {
  /** Interval of heartbeats, ms. Default 500. */
  heartbeatMs: number;
  /** A worker silent this long is declared failed, ms. Default 3000. */
  failureTimeoutMs: number;
  /** How long a joiner listens for answers and name conflicts, ms. Default 50. */
  joinSettleMs: number;
}

/** Options of `initRpc` [init_rpc]. */
export interface InitRpcOptions extends Partial<MembershipTiming> {
  /** Unique worker name in the namespace; default `TENSORBUS_NAME`. */
  name?: string;
  /**
   * A Transport or a promise of one; default NATS at `NATS_URL` when set
   * (loads the optional `@tensorbus/nats-transport`: MissingPackageError
   * when it is not installed), else `localTransport()`.
   */
  transport?: Transport | Promise<Transport>;
  /** Static group size; default `TENSORBUS_WORLD_SIZE`. Without it the group is dynamic. */
  worldSize?: number;
  /** Rank in a static group; default `TENSORBUS_RANK`. */
  rank?: number;
  /** Default timeout of calls, ms; 0 = none. Default 60,000. */
  rpcTimeoutMs?: number;
  /** How long a static group may take to form, ms; 0 = forever. Default 120,000. */
  initTimeoutMs?: number;
  /** Bounds on the state each peer can make on this worker (RRefs, autograd contexts). See docs/rref.md. */
  peerLimits?: Partial<PeerLimits>;
  /**
   * Where this worker logs the calls it served that failed (one line each:
   * worker, function or method, caller, error), as PyTorch prints a remote
   * exception on the callee. Console-compatible (`console` works); `null` or
   * `false` silences it. Default: stderr, silent when `TENSORBUS_QUIET=1`.
   */
  logger?: TensorbusLogger | null | false;
  /**
   * Where the supervised objects this worker owns keep their checkpoints
   * (classes with `checkpoint()`/`restore()`: docs/supervision.md), e.g.
   * `await checkpointStore({ servers: process.env.NATS_URL })`. Default: none
   * (a re-made object starts from its constructor).
   */
  checkpoints?: ObjectCheckpointStore;
}

/** Options with defaults and environment applied. */
export interface ResolvedOptions extends MembershipTiming {
  name: string;
  transport: Promise<Transport>;
  worldSize: number | undefined;
  rank: number | undefined;
  rpcTimeoutMs: number;
  initTimeoutMs: number;
  peerLimits: PeerLimits;
  /** Undefined: silent. */
  logger: TensorbusLogger | undefined;
  checkpoints: ObjectCheckpointStore | undefined;
}

function envInt(key: string): number | undefined {
  const value = envVar(key);
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${key}=${value} is not a non-negative integer`);
  return n;
}

function checkCount(label: string, value: number | undefined, min: number): void {
  if (value !== undefined && (!Number.isInteger(value) || value < min)) {
    throw new InvalidArgumentError(`${label} must be an integer >= ${min}, got ${value}`);
  }
}

/** Applies defaults and the environment; throws InvalidArgumentError on bad values. */
export function resolveOptions(options: InitRpcOptions): ResolvedOptions {
  const name = options.name ?? envVar('TENSORBUS_NAME');
  if (name === undefined) {
    throw new InvalidArgumentError(
      'this worker has no name: pass initRpc({ name }) or set TENSORBUS_NAME; `tensorbus launch -n N script.js` starts N workers with their names, ranks and an embedded nats-server',
    );
  }
  validateWorkerName(name);
  if (options.transport === undefined && !envVar('NATS_URL') && options.name === undefined) {
    // Named by the environment as by the launcher, yet no bus: it would be alone on the in-process bus.
    throw new InvalidArgumentError(
      `TENSORBUS_NAME=${name} is set but NATS_URL is not, so this worker could reach no other process: set NATS_URL=nats://host:4222, start the workers with \`tensorbus launch\`, or pass initRpc({ transport: localTransport() }) for workers in one process`,
    );
  }
  const worldSize = options.worldSize ?? envInt('TENSORBUS_WORLD_SIZE');
  const rank = options.rank ?? envInt('TENSORBUS_RANK');
  checkCount('worldSize', worldSize, 1);
  checkCount('rank', rank, 0);
  if (rank !== undefined && worldSize !== undefined && rank >= worldSize) {
    throw new InvalidArgumentError(`rank ${rank} is not below worldSize ${worldSize}`);
  }
  const timing = {
    heartbeatMs: options.heartbeatMs ?? 500,
    failureTimeoutMs: options.failureTimeoutMs ?? 3_000,
    joinSettleMs: options.joinSettleMs ?? 50,
  };
  checkCount('rpcTimeoutMs', options.rpcTimeoutMs, 0);
  const logger = options.logger;
  if (logger !== undefined && logger !== null && logger !== false && typeof (logger as Partial<TensorbusLogger>).error !== 'function') {
    throw new InvalidArgumentError('logger must have an error(line) method (console works), or be null/false to silence it');
  }
  const checkpoints = options.checkpoints;
  if (checkpoints !== undefined && (typeof checkpoints?.save !== 'function' || typeof checkpoints.load !== 'function')) {
    throw new InvalidArgumentError('checkpoints must be a store with save(key, entries) and load(key) (checkpointStore() of @tensorbus/nats-transport)');
  }
  checkCount('heartbeatMs', timing.heartbeatMs, 1);
  checkCount('failureTimeoutMs', timing.failureTimeoutMs, 1);
  const transport = Promise.resolve(
    options.transport ??
      (envVar('NATS_URL')
        ? natsTransportFromUrl(envVar('NATS_URL')!, envVar('TENSORBUS_NAMESPACE'), name)
        : localTransport()),
  );
  return {
    name,
    transport,
    worldSize,
    rank: worldSize === undefined ? undefined : rank,
    rpcTimeoutMs: options.rpcTimeoutMs ?? 60_000,
    initTimeoutMs: options.initTimeoutMs ?? 120_000,
    peerLimits: resolvePeerLimits(options.peerLimits),
    logger: logger === undefined ? defaultLogger() : logger || undefined,
    checkpoints,
    ...timing,
  };
}
