/**
 * Starts the processes of each Node system of the benchmark: a caller
 * process that runs the cases (answering latency/rate/... commands), and the
 * process it calls, each a separate OS process so their memory is measured
 * apart. tensorbus on the in-process transport is one process by design.
 * @module
 */
import { BenchChild } from '../process/bench-child.js';
import type { CaseKind } from '../cases.js';
import { BROWSER_CASE_IDS, type SystemId } from './system-ids.js';

/** A process of a system, named by its role (for the peak memory figures). */
export interface SystemProcess {
  role: string;
  pid: number;
}

/** A running Node system. */
export interface NodeSystem {
  id: SystemId;
  /** Runs the cases. */
  caller: BenchChild;
  /** Every process involved, the shared nats-server included. */
  processes: SystemProcess[];
  /** The kinds of case it can run. */
  kinds: ReadonlySet<CaseKind>;
  /** The only cases it runs, by id (undefined: every case of its kinds). */
  caseIds?: ReadonlySet<string>;
  stop(): Promise<void>;
}

/** Where the shared nats-server is. */
export interface NatsEndpoint {
  url: string;
  pid: number;
  /** Its WebSocket address, when it serves one (the browser systems need it). */
  wsUrl?: string;
}

/** True when `system` runs case `c`. */
export function runsCase(system: NodeSystem, c: { id: string; kind: CaseKind }): boolean {
  return system.kinds.has(c.kind) && (system.caseIds === undefined || system.caseIds.has(c.id));
}

/** What the reference system with busy polling off runs: the cases a poll window can matter to. */
const REFERENCE_CASES: ReadonlySet<string> = new Set(['noop', '4KB', '4MB', 'rref', 'autograd']);

/**
 * How long the browser systems' workers (the page, its Node driver and the
 * page's callee) wait for a silent member before declaring it failed. A
 * page's heartbeats come from its main thread (docs/browser.md), and on a
 * loaded machine Chromium can leave a renderer without a CPU slice for
 * seconds; these rows measure latency, so a starved tab answers late and
 * stays in the row instead of ending it as failed after the default 3 s.
 */
const TAB_FAILURE_TIMEOUT_MS = 30_000;

const PEER_KINDS: ReadonlySet<CaseKind> = new Set(['latency', 'rate']);
const TENSORBUS_KINDS: ReadonlySet<CaseKind> = new Set(['latency', 'rate', 'rref', 'autograd']);

/** A system of a caller and the processes it calls; stopping it stops them all. */
export function system(id: SystemId, caller: BenchChild, servers: BenchChild[], kinds: ReadonlySet<CaseKind>, processes: SystemProcess[]): NodeSystem {
  return {
    id,
    caller,
    kinds,
    processes,
    stop: async () => {
      await caller.stop();
      await Promise.all(servers.map((s) => s.stop()));
    },
  };
}

/** A peer made of a server process and a client process that calls it on the server's port. */
async function clientServer(id: SystemId, serverLabel: string, serverScript: string, clientLabel: string, clientScript: string): Promise<NodeSystem> {
  const server = await BenchChild.start({ label: serverLabel, script: serverScript });
  const caller = await BenchChild.start({ label: clientLabel, script: clientScript, args: ['--port', String(server.info.port)] });
  return system(id, caller, [server], PEER_KINDS, [
    { role: 'client', pid: caller.pid },
    { role: 'server', pid: server.pid },
  ]);
}

/** The systems of one host made of Node processes (the bench starts the two-host ones itself, in their namespaces). */
export type NodeSystemId = Exclude<SystemId, 'pytorch' | 'tensorbus-2hosts' | 'pytorch-2hosts'>;

/** Starts the processes of `id` and resolves once its caller is ready. */
export async function startNodeSystem(id: NodeSystemId, nats: NatsEndpoint | undefined): Promise<NodeSystem> {
  const natsEnv = (): Record<string, string> => {
    if (!nats) throw new Error(`${id} needs the nats-server`);
    return { NATS_URL: nats.url };
  };
  switch (id) {
    case 'tensorbus-nats':
    case 'tensorbus-nats-no-poll': {
      const env = id === 'tensorbus-nats' ? natsEnv() : { ...natsEnv(), TENSORBUS_BUSY_POLL_US: '0', TENSORBUS_BENCH_NAMESPACE: 'nopoll' };
      const callee = await BenchChild.start({ label: id === 'tensorbus-nats' ? 'tensorbus callee' : 'tensorbus callee (polling off)', script: 'systems/tensorbus-callee.js', env });
      const caller = await BenchChild.start({ label: id === 'tensorbus-nats' ? 'tensorbus driver' : 'tensorbus driver (polling off)', script: 'systems/tensorbus-caller.js', args: ['--transport', 'nats'], env });
      const started = system(id, caller, [callee], TENSORBUS_KINDS, [
        { role: 'driver', pid: caller.pid },
        { role: 'callee', pid: callee.pid },
        { role: 'nats-server', pid: nats!.pid },
      ]);
      return id === 'tensorbus-nats' ? started : { ...started, caseIds: REFERENCE_CASES };
    }
    case 'tensorbus-nats-bus': {
      // The direct plane off: 4 MB goes through the nats-server, as between a tab and a Node worker.
      const env = { ...natsEnv(), TENSORBUS_BENCH_NAMESPACE: 'bus', TENSORBUS_BENCH_BUS_ONLY: '1' };
      const callee = await BenchChild.start({ label: 'tensorbus callee (bus only)', script: 'systems/tensorbus-callee.js', env });
      const caller = await BenchChild.start({ label: 'tensorbus driver (bus only)', script: 'systems/tensorbus-caller.js', args: ['--transport', 'nats'], env });
      const started = system(id, caller, [callee], TENSORBUS_KINDS, [
        { role: 'driver', pid: caller.pid },
        { role: 'callee', pid: callee.pid },
        { role: 'nats-server', pid: nats!.pid },
      ]);
      return { ...started, caseIds: BROWSER_CASE_IDS };
    }
    case 'tab-to-node':
    case 'node-to-tab': {
      if (!nats?.wsUrl) throw new Error(`${id} needs the nats-server's WebSocket port`);
      const env = { ...natsEnv(), TENSORBUS_BENCH_NAMESPACE: id, TENSORBUS_BENCH_WS_URL: nats.wsUrl, TENSORBUS_BENCH_FAILURE_TIMEOUT_MS: String(TAB_FAILURE_TIMEOUT_MS) };
      // From the tab, the Node callee is a process of its own, as for the Node drivers; into the tab, the driver calls the page.
      const callee = id === 'tab-to-node' ? [await BenchChild.start({ label: 'tensorbus callee (of the tab)', script: 'systems/tensorbus-callee.js', env: { ...env, TENSORBUS_BENCH_BUS_ONLY: '1' } })] : [];
      const direction = id === 'tab-to-node' ? 'to-node' : 'to-tab';
      const caller = await BenchChild.start({ label: `tab driver (${direction})`, script: 'systems/tab-driver.js', args: ['--direction', direction], env });
      const started = system(id, caller, callee, new Set(['latency']), [
        { role: 'driver and Chromium', pid: caller.pid },
        ...callee.map((c) => ({ role: 'callee', pid: c.pid })),
        { role: 'nats-server', pid: nats.pid },
      ]);
      return { ...started, caseIds: BROWSER_CASE_IDS };
    }
    case 'tensorbus-local': {
      const caller = await BenchChild.start({ label: 'tensorbus local', script: 'systems/tensorbus-caller.js', args: ['--transport', 'local'], env: { NATS_URL: '' } });
      return system(id, caller, [], TENSORBUS_KINDS, [{ role: 'driver + callee (one process)', pid: caller.pid }]);
    }
    case 'nats': {
      const responder = await BenchChild.start({ label: 'nats responder', script: 'systems/nats-raw-responder.js', env: natsEnv() });
      const caller = await BenchChild.start({ label: 'nats requester', script: 'systems/nats-raw-client.js', env: natsEnv() });
      return system(id, caller, [responder], PEER_KINDS, [
        { role: 'requester', pid: caller.pid },
        { role: 'responder', pid: responder.pid },
        { role: 'nats-server', pid: nats!.pid },
      ]);
    }
    case 'grpc':
      return clientServer(id, 'grpc server', 'systems/grpc-server.js', 'grpc client', 'systems/grpc-client.js');
    case 'tcp':
      return clientServer(id, 'tcp echo server', 'systems/tcp-echo-server.js', 'tcp client', 'systems/tcp-client.js');
  }
}
