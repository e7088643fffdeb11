/**
 * The data-plane experiments of `npm run bench -- --experiment <name>`: each
 * names a mechanism, the switch that turns it off (environment variables of
 * the tensorbus processes), the cases it can matter to, and where it is
 * measured (one host; two hosts joined by a veth pair; the same with
 * `tc netem` delay added). See run-experiment.ts for how a run goes and
 * docs/experiments/data-plane.md for the results, those of the mechanisms
 * that were removed for showing no gain included.
 * @module
 */

import type { AppCase } from '../apps/app-cases.js';

/** Where an experiment runs: one host, two network namespaces, or two with netem delay on their veth pair. */
export type Placement = 'one-host' | 'two-hosts' | 'two-hosts-netem';

/**
 * A case of an experiment: a round trip of `bytes` (0: no-op), RRef cycles
 * per second, or an example through `tensorbus launch` (one run per block;
 * one host only): the RL example with `--max-episodes 30`, the parameter
 * server and the pipeline at the lengths of the bench's application cases.
 */
export type ExperimentCase = CallCase | ExampleCase;

/** A case of calls between the two sides' driver and callee. */
export interface CallCase {
  id: string;
  kind: 'latency' | 'rref';
  bytes?: number;
}

/** A case that runs one of the bench's application examples. */
export interface ExampleCase {
  id: string;
  kind: 'app';
  app: AppCase['id'];
}

/** One A/B experiment. */
export interface Experiment {
  name: string;
  /** What the mechanism is, in a sentence (printed above its table). */
  mechanism: string;
  /** Environment of both tensorbus processes with the mechanism on (A) and off (B). */
  on: Record<string, string>;
  off: Record<string, string>;
  cases: ExperimentCase[];
  placements: Placement[];
}

const MB = 2 ** 20;
const NOOP: ExperimentCase = { id: 'noop', kind: 'latency', bytes: 0 };
const KB4: ExperimentCase = { id: '4KB', kind: 'latency', bytes: 4096 };
const MB4: ExperimentCase = { id: '4MB', kind: 'latency', bytes: 4 * MB };
const MB40: ExperimentCase = { id: '40MB', kind: 'latency', bytes: 40 * MB };
const MB400: ExperimentCase = { id: '400MB', kind: 'latency', bytes: 400 * MB };
const RREF: ExperimentCase = { id: 'rref', kind: 'rref' };
const RL: ExperimentCase = { id: 'RL example', kind: 'app', app: 'rl' };
const PS: ExperimentCase = { id: 'parameter server', kind: 'app', app: 'parameter-server' };
const PIPELINE: ExperimentCase = { id: 'pipeline', kind: 'app', app: 'pipeline' };
/** What every busy-polling experiment runs: small calls and the RL example, on one host (polling is a same-host matter); polling is on by default, so A is the default. */
const POLLING_RUNS = { cases: [NOOP, KB4, RREF, RL], placements: ['one-host'] as Placement[] };

/** Every experiment, by name. */
export const EXPERIMENTS: readonly Experiment[] = [
  {
    name: 'lanes',
    mechanism: 'A requester that got a large reply from another host opens 8 connections to its data port, and replies of 1-64 MiB go out striped over them (off: direct.lanes 1, through TENSORBUS_BENCH_LANES).',
    on: {},
    off: { TENSORBUS_BENCH_LANES: '1' },
    cases: [MB4, MB400],
    placements: ['two-hosts', 'two-hosts-netem'],
  },
  {
    name: 'filling',
    mechanism: 'A large deferred frame is announced before it is in its shared-memory segment and read while it is copied in (TENSORBUS_SHM_FILLING=0 off).',
    on: {},
    off: { TENSORBUS_SHM_FILLING: '0' },
    cases: [MB4, MB40, MB400],
    placements: ['one-host'],
  },
  {
    name: 'write-from-heap',
    mechanism: 'Deferred frames are written to the socket straight from the WASM heap instead of through chunk buffers (TENSORBUS_WRITE_FROM_HEAP=0 off).',
    on: {},
    off: { TENSORBUS_WRITE_FROM_HEAP: '0' },
    cases: [MB4, MB400],
    placements: ['one-host', 'two-hosts'],
  },
  {
    name: 'shm-max-frame',
    mechanism: 'Frames beyond 64 MiB stream over TCP instead of going through a shared-memory segment (off: TENSORBUS_SHM_MAX_FRAME_BYTES=1 GiB, every frame in a segment).',
    on: {},
    off: { TENSORBUS_SHM_MAX_FRAME_BYTES: String(2 ** 30) },
    cases: [MB400],
    placements: ['one-host'],
  },
  {
    name: 'unix-socket',
    mechanism: 'Connections to a data port of the same host and user go through its Unix socket instead of TCP loopback (off: TENSORBUS_UNIX_SOCKETS=0).',
    on: {},
    off: { TENSORBUS_UNIX_SOCKETS: '0' },
    cases: [NOOP, KB4, MB4, RREF, RL, PS, PIPELINE],
    placements: ['one-host'],
  },
  {
    name: 'read-ahead',
    mechanism: 'A requester reads what arrives at the start of a reply into a 64 KiB buffer, so a small reply and its header come in one read and the read after it finds nothing pending; a long body\'s rest is read in place (off: TENSORBUS_EXPERIMENT_READ_AHEAD=0, the header read into its own buffer and the body into its own).',
    on: {},
    off: { TENSORBUS_EXPERIMENT_READ_AHEAD: '0' },
    cases: [NOOP, KB4, MB4, RREF],
    placements: ['one-host', 'two-hosts'],
  },
  {
    name: 'busy-poll',
    mechanism: 'After a send on a direct route the event loop polls for 500 µs (off: TENSORBUS_BUSY_POLL_US=0).',
    on: {},
    off: { TENSORBUS_BUSY_POLL_US: '0' },
    ...POLLING_RUNS,
  },
  {
    name: 'poll-backoff',
    mechanism: 'After 3 polling windows in a row without an answer, polling stops for 1, 2, 4 ... 1024 sends (off: TENSORBUS_EXPERIMENT_POLL_BACKOFF=0).',
    on: {},
    off: { TENSORBUS_EXPERIMENT_POLL_BACKOFF: '0' },
    ...POLLING_RUNS,
  },
];

/** The experiment called `name`; throws with the known names otherwise. */
export function experimentNamed(name: string): Experiment {
  const found = EXPERIMENTS.find((e) => e.name === name);
  if (!found) throw new Error(`unknown experiment '${name}'; experiments: ${EXPERIMENTS.map((e) => e.name).join(', ')}`);
  return found;
}
