/**
 * A worker started by a supervising `tensorbus launch` tells its launcher,
 * over the IPC channel the launcher opened, which instance it is once it has
 * joined, and which instances its membership declares failed. The launcher
 * kills a declared-failed worker that still runs (a SIGSTOPped or wedged
 * process: its heartbeats stopped, its process did not) and restarts it; the
 * instance id keeps a late report about an old incarnation from killing the
 * new one. The channel never keeps the worker alive.
 * @module
 */
import type { RpcAgent } from '../agent/rpc-agent.js';
import { hostOf } from '../agent/rpc-agent.js';
import { MEMBERSHIP } from '../membership/plugin.js';
import { envVar } from '../platform/process.js';

/** A worker's report to its launcher. */
export type LauncherReport =
  | { k: 'tensorbus.joined'; name: string; inst: string }
  | { k: 'tensorbus.failed'; name: string; inst: string };

/** Reports `agent`'s instance and the failures its membership declares, when a launcher listens (`process.send`). */
export function reportToLauncher(agent: RpcAgent): void {
  if (envVar('TENSORBUS_LAUNCHER_PID') === undefined || typeof process.send !== 'function') return;
  const membership = hostOf(agent).plugin(MEMBERSHIP);
  const send = (report: LauncherReport) => {
    if (process.connected) process.send!(report, undefined, undefined, () => undefined);
  };
  send({ k: 'tensorbus.joined', name: agent.self.name, inst: membership.inst });
  const subscription = membership.gone$.subscribe(({ name, reason }) => {
    const inst = membership.instanceOf(name);
    if (reason === 'failed' && inst !== undefined) send({ k: 'tensorbus.failed', name, inst });
  });
  agent.whenStopped(() => subscription.unsubscribe());
}
