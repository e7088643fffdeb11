/**
 * Messages the worker processes send to `main.js` over the IPC channel of
 * `child_process.fork`: readiness, their isolation probes, the rounds.
 * @module
 */
import type { IsolationReport } from './isolation.js';
import type { RoundResult } from './server.js';

/** A message from a worker process to main. */
export type WorkerMessage =
  | { kind: 'ready' }
  | { kind: 'joined'; worker: string; samples: number; classCounts: number[] }
  | { kind: 'isolation'; report: IsolationReport }
  | { kind: 'round'; result: RoundResult }
  | { kind: 'done'; backend: string; seconds: number };

/** Sends `message` to main; resolves once it is handed over (at once when the process was not forked). */
export function tellMain(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}
