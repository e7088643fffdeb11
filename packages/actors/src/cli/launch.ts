/**
 * `tensorbus launch`: starts N worker processes on one bus, prefixes their
 * output with their names, and stops them all when one fails.
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { startNatsServer } from '@tensorbus/nats-transport';
import type { LaunchArgs } from './args.js';

function pipeLines(stream: NodeJS.ReadableStream | null, prefix: string, out: NodeJS.WriteStream): void {
  if (!stream) return;
  createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => out.write(`${prefix}${line}\n`));
}

/** Runs the launch; resolves with the exit code for the launcher. */
export async function launch(args: LaunchArgs): Promise<number> {
  let url = process.env.NATS_URL;
  let server: { stop(): Promise<void> } | undefined;
  if (!url) {
    const started = await startNatsServer();
    server = started;
    url = started.url;
    process.stderr.write(`[tensorbus] started an embedded nats-server at ${url} (pid ${started.pid})\n`);
  }
  const width = Math.max(...args.names.map((n) => n.length));
  const children = new Map<string, ChildProcess>();
  let exitCode = 0;
  let stopping = false;
  const stopAll = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const child of children.values()) if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    exitCode ||= 130;
    stopAll(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const exits = args.names.map(
    (name, rank) =>
      new Promise<void>((resolve) => {
        const child = spawn(process.execPath, [args.script, ...args.scriptArgs], {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: {
            ...process.env,
            NATS_URL: url,
            TENSORBUS_NAME: name,
            TENSORBUS_RANK: String(rank),
            TENSORBUS_WORLD_SIZE: String(args.count),
            ...(args.namespace ? { TENSORBUS_NAMESPACE: args.namespace } : {}),
          },
        });
        children.set(name, child);
        const prefix = `[${name.padEnd(width)}] `;
        pipeLines(child.stdout, prefix, process.stdout);
        pipeLines(child.stderr, prefix, process.stderr);
        child.on('exit', (code, signal) => {
          if ((code !== 0 || signal) && !stopping) {
            process.stderr.write(`[tensorbus] ${name} exited with ${signal ?? `code ${code}`}: stopping the other workers\n`);
            exitCode = code || 1;
            stopAll('SIGTERM');
            setTimeout(() => stopAll('SIGKILL'), 5_000).unref();
          }
          resolve();
        });
        child.on('error', (error) => {
          process.stderr.write(`[tensorbus] cannot start ${name}: ${error.message}\n`);
          exitCode ||= 1;
          resolve();
        });
      }),
  );
  await Promise.all(exits);
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  await server?.stop();
  return exitCode;
}
