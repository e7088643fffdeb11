/**
 * The wait of a `tensorbus` command that serves until it is stopped.
 * @module
 */

/** Resolves with the first SIGINT or SIGTERM this process receives (Ctrl-C, or a service manager's stop). */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
