/**
 * For worker processes that tests start: exits (code 70) once the process
 * that started this one is gone, so a failed or aborted test leaves no worker
 * lingering.
 * @module
 */

/** Watches the parent process every second; the watch does not keep this process alive. */
export function exitWithParent(): void {
  const parent = process.ppid;
  setInterval(() => {
    try {
      process.kill(parent, 0);
    } catch {
      process.exit(70);
    }
  }, 1_000).unref();
}
