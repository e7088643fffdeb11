/**
 * The systems the benchmark compares: tensorbus on each transport, and the
 * peers it is measured against, on one host; and tensorbus and PyTorch RPC
 * between two hosts (two network namespaces joined by a veth pair).
 * @module
 */

/** Every system, in the order the tables print them. */
export const SYSTEM_IDS = ['tensorbus-nats', 'tensorbus-nats-nopoll', 'tensorbus-local', 'nats', 'grpc', 'tcp', 'pytorch', 'tensorbus-2hosts', 'pytorch-2hosts'] as const;

/** One of {@link SYSTEM_IDS}. */
export type SystemId = (typeof SYSTEM_IDS)[number];

/** The tensorbus systems of one host; the others there are peers. */
export const TENSORBUS_SYSTEMS: readonly SystemId[] = ['tensorbus-nats', 'tensorbus-local'];

/**
 * tensorbus over NATS with busy polling off (`TENSORBUS_BUSY_POLL_US=0`), on
 * the small cases and the protocols: shown beside the default for what the
 * polling buys, with no ratios or targets of its own.
 */
export const REFERENCE_SYSTEMS: readonly SystemId[] = ['tensorbus-nats-nopoll'];

/** The peers tensorbus is compared with on one host. */
export const PEER_SYSTEMS: readonly SystemId[] = ['nats', 'grpc', 'tcp', 'pytorch'];

/** The systems measured between two hosts: tensorbus first, then its peer there. */
export const TWO_HOST_SYSTEMS: readonly SystemId[] = ['tensorbus-2hosts', 'pytorch-2hosts'];

/** Names as the tables print them. */
export const SYSTEM_LABELS: Record<SystemId, string> = {
  'tensorbus-nats': 'tensorbus (NATS, 2 processes)',
  'tensorbus-nats-nopoll': 'tensorbus (NATS, 2 processes, busy polling off)',
  'tensorbus-local': 'tensorbus (in-process)',
  nats: 'raw NATS request/reply',
  grpc: 'gRPC-js unary, raw bytes',
  tcp: 'raw TCP (Node)',
  pytorch: 'PyTorch RPC (TensorPipe)',
  'tensorbus-2hosts': 'tensorbus (NATS, 2 hosts)',
  'pytorch-2hosts': 'PyTorch RPC (TensorPipe, 2 hosts)',
};

/** Short names for table columns. */
export const SYSTEM_SHORT: Record<SystemId, string> = {
  'tensorbus-nats': 'tensorbus NATS',
  'tensorbus-nats-nopoll': 'tensorbus NATS, no polling',
  'tensorbus-local': 'tensorbus local',
  nats: 'raw NATS',
  grpc: 'gRPC-js',
  tcp: 'raw TCP',
  pytorch: 'PyTorch RPC',
  'tensorbus-2hosts': 'tensorbus 2 hosts',
  'pytorch-2hosts': 'PyTorch RPC 2 hosts',
};
