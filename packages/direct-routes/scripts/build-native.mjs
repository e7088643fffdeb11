#!/usr/bin/env node
// Builds the shared-memory addon (native/tensorbus_shm.c) with the machine's C
// compiler against Node's own headers. Optional: without it, same-host
// transfers use TCP. Never fails the build; says what happened in one line.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
const sourceFile = join(packageDir, 'native', 'tensorbus_shm.c');
const outputFile = join(packageDir, 'native', 'build', 'tensorbus_shm.node');
const say = (text) => console.log(`[tensorbus] ${text}`);

function headerDir() {
  const candidates = [
    process.env.npm_config_nodedir && join(process.env.npm_config_nodedir, 'include', 'node'),
    join(dirname(process.execPath), '..', 'include', 'node'),
    '/usr/include/node',
    '/usr/local/include/node',
  ].filter(Boolean);
  return candidates.find((dir) => existsSync(join(dir, 'node_api.h')));
}

function build() {
  if (process.platform !== 'linux') return 'shared memory needs Linux (memfd): same-host transfers use TCP';
  if (existsSync(outputFile) && statSync(outputFile).mtimeMs >= statSync(sourceFile).mtimeMs) return undefined;
  const headers = headerDir();
  if (!headers) return "Node's headers (node_api.h) not found: install them (Debian: apt-get install libnode-dev) for the shared-memory data plane; same-host transfers use TCP";
  mkdirSync(dirname(outputFile), { recursive: true });
  const flags = ['-O2', '-Wall', '-shared', '-fPIC', '-DNODE_GYP_MODULE_NAME=tensorbus_shm', '-DNAPI_VERSION=8', `-I${headers}`];
  // The first compiler found builds it; g++ is told the source is C.
  const compilers = [...(process.env.CC ? [[process.env.CC]] : []), ['cc'], ['gcc'], ['clang'], ['g++', '-x', 'c']];
  let why = 'no C compiler (cc, gcc, clang or g++)';
  for (const [compiler, ...language] of compilers) {
    try {
      execFileSync(compiler, [...flags, ...language, sourceFile, '-o', outputFile], { stdio: ['ignore', 'ignore', 'pipe'] });
      why = undefined;
      break;
    } catch (error) {
      if (error.code === 'ENOENT') continue;
      why = String(error.stderr || error.message).trim().split('\n')[0];
      break;
    }
  }
  if (why) return `cannot build the shared-memory addon: ${why}; same-host transfers use TCP (install a C compiler, e.g. apt-get install gcc, and rebuild)`;
  say(`built the shared-memory addon (${outputFile})`);
  return undefined;
}

const problem = build();
if (problem) say(problem);
