#!/usr/bin/env node
/**
 * The `tensorbus` command: `launch` and `status`, and `gateway` and
 * `dashboard` from their own packages when installed (command-packages.ts).
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
  // Loaded per command, as the others: `--help` loads nothing (core would load TensorFlow.js).
  if (args.command === 'gateway') {
    const { loadGatewayCommand } = await import('./command-packages.js');
    return (await loadGatewayCommand()).gatewayCommand(args);
  }
  if (args.command === 'dashboard') {
    const { loadDashboardCommand } = await import('./command-packages.js');
    return (await loadDashboardCommand('`tensorbus dashboard`')).dashboardCommand(args);
  }
  return (await import('./status.js')).status(args);
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`tensorbus: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
