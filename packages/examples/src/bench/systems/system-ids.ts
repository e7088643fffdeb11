/**
 * The systems the benchmark compares: tensorbus on each transport, and the
 * peers it is measured against.
 * @module
 */

/** Every system, in the order the tables print them. */
export const SYSTEM_IDS = ['tensorbus-nats', 'tensorbus-local', 'nats', 'grpc', 'tcp', 'pytorch'] as const;

/** One of {@link SYSTEM_IDS}. */
export type SystemId = (typeof SYSTEM_IDS)[number];

/** The tensorbus systems; the others are peers. */
export const TENSORBUS_SYSTEMS: readonly SystemId[] = ['tensorbus-nats', 'tensorbus-local'];

/** The peers tensorbus is compared with. */
export const PEER_SYSTEMS: readonly SystemId[] = ['nats', 'grpc', 'tcp', 'pytorch'];

/** Names as the tables print them. */
export const SYSTEM_LABELS: Record<SystemId, string> = {
  'tensorbus-nats': 'tensorbus (NATS, 2 processes)',
  'tensorbus-local': 'tensorbus (in-process)',
  nats: 'raw NATS request/reply',
  grpc: 'gRPC-js unary, raw bytes',
  tcp: 'raw TCP (Node)',
  pytorch: 'PyTorch RPC (TensorPipe)',
};

/** Short names for table columns. */
export const SYSTEM_SHORT: Record<SystemId, string> = {
  'tensorbus-nats': 'tensorbus NATS',
  'tensorbus-local': 'tensorbus local',
  nats: 'raw NATS',
  grpc: 'gRPC-js',
  tcp: 'raw TCP',
  pytorch: 'PyTorch RPC',
};
