/**
 * A worker started by `tensorbus launch` runs in a process group of its own
 * (so Ctrl-C reaches only the launcher, which passes it on once). If the
 * launcher dies without passing anything on (SIGKILL), its workers must not
 * linger: each one watches it and sends itself SIGTERM once it is gone, so a
 * handler the user installed still shuts down gracefully.
 * @module
 */
import { envVar } from '../platform/process.js';

let watching = false;

/** Watches the launcher named by `TENSORBUS_LAUNCHER_PID`, if any; the watch never keeps the process alive. */
export function watchLauncher(): void {
  // A page has no environment (envVar is undefined there), so no launcher: returns before touching `process`.
  const launcher = Number(envVar('TENSORBUS_LAUNCHER_PID'));
  if (watching || !Number.isSafeInteger(launcher) || launcher <= 1) return;
  watching = true;
  const timer = setInterval(() => {
    try {
      process.kill(launcher, 0);
    } catch {
      clearInterval(timer);
      process.stderr.write('[tensorbus] the launcher is gone: stopping this worker\n');
      process.kill(process.pid, 'SIGTERM');
    }
  }, 1_000);
  timer.unref();
}
