#!/usr/bin/env node
// The `tensorbus` command. This file is committed (not built) so that npm links
// `node_modules/.bin/tensorbus` at install time, before `npm run build` makes
// the code it runs; run before a build, it says what to do.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  process.stderr.write('tensorbus: not built yet: run `npm run build` at the repository root first\n');
  process.exit(2);
}
await import(main.href);
