/**
 * Runs an example through `tensorbus launch` on its own embedded nats-server,
 * as a user would, and collects what it prints.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../../../actors/dist/src/cli/main.js', import.meta.url));

/** More of a launch: options of the launcher itself, and what to do while it runs (given its output so far). */
export interface LaunchExtras {
  launcherArgs?: string[];
  during?: (output: () => string) => Promise<void>;
}

/** Launches `script` (a path under dist/src) as the workers `names`, with `args`; resolves when all exit. */
export async function launchExample(names: string[], script: string, args: string[], extras: LaunchExtras = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const main = fileURLToPath(new URL(`../src/${script}`, import.meta.url));
  const launcherArgs = extras.launcherArgs ?? [];
  const child = spawn(process.execPath, [cli, 'launch', '-n', String(names.length), '--names', names.join(','), ...launcherArgs, main, ...args], {
    env: { ...process.env, NATS_URL: '', TENSORBUS_QUIET: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d;
    process.stderr.write(d);
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  try {
    await extras.during?.(() => stdout + stderr);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  const code = await exited;
  return { code, stdout, stderr };
}
