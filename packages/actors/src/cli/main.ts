#!/usr/bin/env node
/**
 * The `tensorbus` command: `launch`, `status`, `gateway` and `dashboard`.
 * @module
 */
import { parseArgs, USAGE } from './args.js';

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (args.command === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (args.command === 'launch') return (await import('./launch.js')).launch(args);
  if (args.command === 'gateway') return (await import('./gateway-command.js')).gateway(args);
  if (args.command === 'dashboard') return (await import('./dashboard.js')).dashboard(args);
  return (await import('./status.js')).status(args);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`tensorbus: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
