/**
 * The systems the benchmark compares: tensorbus on each transport, and the
 * peers it is measured against, on one host; and tensorbus and PyTorch RPC
 * between two hosts (two network namespaces joined by a veth pair).
 * @module
 */

/** Every system, in the order the tables print them. */
export const SYSTEM_IDS = [
  'tensorbus-nats',
  'tensorbus-nats-no-poll',
  'tensorbus-local',
  'nats',
  'grpc',
  'tcp',
  'pytorch',
  'tensorbus-2hosts',
  'pytorch-2hosts',
  'tab-to-node',
  'node-to-tab',
  'tensorbus-nats-bus',
] as const;

/** One of {@link SYSTEM_IDS}. */
export type SystemId = (typeof SYSTEM_IDS)[number];

/** The tensorbus systems of one host; the others there are peers. */
export const TENSORBUS_SYSTEMS: readonly SystemId[] = ['tensorbus-nats', 'tensorbus-local'];

/**
 * tensorbus over NATS with busy polling off (`TENSORBUS_BUSY_POLL_US=0`; on
 * by default), on the small cases and the protocols: shown beside the
 * default for what polling buys, with no ratios or targets of its own.
 */
export const REFERENCE_SYSTEMS: readonly SystemId[] = ['tensorbus-nats-no-poll'];

/** The peers tensorbus is compared with on one host. */
export const PEER_SYSTEMS: readonly SystemId[] = ['nats', 'grpc', 'tcp', 'pytorch'];

/** The systems measured between two hosts: tensorbus first, then its peer there. */
export const TWO_HOST_SYSTEMS: readonly SystemId[] = ['tensorbus-2hosts', 'pytorch-2hosts'];

/**
 * A browser tab (headless Chromium, the browser builds over NATS WebSocket)
 * calling a Node worker and called by one, beside Node to Node through the
 * bus alone (direct plane off): no-op and 4 MB only, in a table of their own
 * ({@link BROWSER_CASE_IDS}).
 */
export const BROWSER_SYSTEMS: readonly SystemId[] = ['tab-to-node', 'node-to-tab', 'tensorbus-nats-bus'];

/** The cases the browser systems run. */
export const BROWSER_CASE_IDS: ReadonlySet<string> = new Set(['noop', '4MB']);

/** Names as the tables print them. */
export const SYSTEM_LABELS: Record<SystemId, string> = {
  'tensorbus-nats': 'tensorbus (NATS, 2 processes)',
  'tensorbus-nats-no-poll': 'tensorbus (NATS, 2 processes, busy polling off)',
  'tensorbus-local': 'tensorbus (in-process)',
  nats: 'raw NATS request/reply',
  grpc: 'gRPC-js unary, raw bytes',
  tcp: 'raw TCP (Node)',
  pytorch: 'PyTorch RPC (TensorPipe)',
  'tensorbus-2hosts': 'tensorbus (NATS, 2 hosts)',
  'pytorch-2hosts': 'PyTorch RPC (TensorPipe, 2 hosts)',
  'tab-to-node': 'tensorbus, browser tab → Node (WebSocket)',
  'node-to-tab': 'tensorbus, Node → browser tab (WebSocket)',
  'tensorbus-nats-bus': 'tensorbus (NATS, 2 processes, bus only)',
};

/** Short names for table columns. */
export const SYSTEM_SHORT: Record<SystemId, string> = {
  'tensorbus-nats': 'tensorbus NATS',
  'tensorbus-nats-no-poll': 'tensorbus NATS, polling off',
  'tensorbus-local': 'tensorbus local',
  nats: 'raw NATS',
  grpc: 'gRPC-js',
  tcp: 'raw TCP',
  pytorch: 'PyTorch RPC',
  'tensorbus-2hosts': 'tensorbus 2 hosts',
  'pytorch-2hosts': 'PyTorch RPC 2 hosts',
  'tab-to-node': 'tab → Node',
  'node-to-tab': 'Node → tab',
  'tensorbus-nats-bus': 'Node → Node, bus',
};
