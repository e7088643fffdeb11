/**
 * `@tensorbus/actors` on `@tensorbus/core` alone: no source file imports
 * another tensorbus package, and what needs NATS (the `NATS_URL` default, the
 * CLI) loads `@tensorbus/nats-transport` when it runs, with a
 * MissingPackageError saying what to install when it is absent. "Absent" is
 * real: the child processes run with module hooks that make the package
 * unresolvable, as Node reports a package that is not installed.
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import type { NatsTransportModule } from '../src/nats-loader.js';
import { runNode as run, type Ran } from './launcher-helpers.js';

const packageDir = fileURLToPath(new URL('../../', import.meta.url));
const cli = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const envWorker = fileURLToPath(new URL('./fixtures/env-worker.js', import.meta.url));
const withoutNats = fileURLToPath(new URL('./fixtures/no-nats-transport.js', import.meta.url));

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

/** Module specifiers of static imports and re-exports (`import … from 'x'`, `import 'x'`, `export … from 'x'`, `import('x')` with a literal). */
function importedSpecifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [/\bfrom\s+['"]([^'"]+)['"]/g, /\bimport\s+['"]([^'"]+)['"]/g, /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g];
  for (const pattern of patterns) for (const match of text.matchAll(pattern)) found.push(match[1]!);
  return found;
}

function lastJsonLine(ran: Ran): Record<string, unknown> {
  const line = ran.out.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    throw new Error(`no result line (exit ${ran.code})\n--- stdout\n${ran.out}\n--- stderr\n${ran.err}`);
  }
}

const MISSING = /@tensorbus\/nats-transport is not installed: npm i @tensorbus\/nats-transport/;

test('packaging - no source file of @tensorbus/actors imports a tensorbus package other than @tensorbus/core', (t) => {
  const offenders: string[] = [];
  for (const file of sources(join(packageDir, 'src'))) {
    for (const specifier of importedSpecifiers(readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('@tensorbus/') && specifier !== '@tensorbus/core' && specifier !== '@tensorbus/core/internal') {
        offenders.push(`${file.slice(packageDir.length)} imports ${specifier}`);
      }
    }
  }
  t.deepEqual(offenders, []);
});

test('packaging - @tensorbus/nats-transport is an optional peer of @tensorbus/actors, and actors\' sources build without it', (t) => {
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as Record<string, Record<string, unknown> | undefined>;
  t.false('@tensorbus/nats-transport' in (pkg.dependencies ?? {}), 'not a dependency');
  t.is(pkg.peerDependencies?.['@tensorbus/nats-transport'], '0.1.0');
  t.deepEqual(pkg.peerDependenciesMeta?.['@tensorbus/nats-transport'], { optional: true });
  const srcProject = JSON.parse(readFileSync(join(packageDir, 'tsconfig.src.json'), 'utf8')) as { include: string[]; references: Array<{ path: string }> };
  t.deepEqual(srcProject.include, ['src']);
  t.deepEqual(srcProject.references.map((r) => r.path), ['../core'], 'the sources\' project references core alone');
});

test('packaging - with NATS_URL set, initRpc() connects through @tensorbus/nats-transport loaded at run time', async (t) => {
  // The face the loader declares is the package's (a compile-time check): a change of either breaks the build.
  const real: NatsTransportModule = await import('@tensorbus/nats-transport');
  t.is(typeof real.natsTransport, 'function');
  const server = await sharedNatsServer();
  const ran = await run([envWorker], { NATS_URL: server.url, TENSORBUS_NAME: 'lonely', TENSORBUS_NAMESPACE: `optional-nats-${process.pid}` });
  t.deepEqual(lastJsonLine(ran), { ok: true }, ran.err);
});

test('packaging - with NATS_URL set and @tensorbus/nats-transport not installed, initRpc() rejects with MissingPackageError saying what to install', async (t) => {
  const ran = await run(['--import', withoutNats, envWorker], { NATS_URL: 'nats://127.0.0.1:1', TENSORBUS_NAME: 'lonely' });
  const result = lastJsonLine(ran);
  t.is(result.ok, false);
  t.is(result.name, 'MissingPackageError');
  t.is(result.code, 'MISSING_PACKAGE');
  t.is(result.packageName, '@tensorbus/nats-transport');
  t.regex(String(result.message), /^NATS_URL is set but @tensorbus\/nats-transport is not installed: npm i @tensorbus\/nats-transport, or pass a transport/);
});

test('packaging - without @tensorbus/nats-transport, initRpc() with no NATS_URL still runs on the in-process transport', async (t) => {
  // A name from options (not the environment) and no NATS_URL: localTransport, nothing to load.
  const script = `import { initRpc } from ${JSON.stringify(new URL('../src/index.js', import.meta.url).href)};
    const agent = await initRpc({ name: 'solo' });
    process.stdout.write(JSON.stringify({ ok: true, name: agent.getWorkerInfo().name }) + '\\n');
    await agent.shutdown();`;
  const ran = await run(['--import', withoutNats, '--input-type=module', '-e', script], {});
  t.deepEqual(lastJsonLine(ran), { ok: true, name: 'solo' }, ran.err);
});

test('packaging - without @tensorbus/nats-transport, `tensorbus launch` with no NATS_URL exits 2 saying what to install', async (t) => {
  const ran = await run(['--import', withoutNats, cli, 'launch', '-n', '1', envWorker], {});
  t.is(ran.code, 2);
  t.regex(ran.err, /NATS_URL is not set, so `tensorbus launch` starts a nats-server, but @tensorbus\/nats-transport is not installed/);
  t.regex(ran.err, MISSING);
  t.regex(ran.err, /or set NATS_URL=/);
});

test('packaging - without @tensorbus/nats-transport, `tensorbus status` exits 2 saying what to install', async (t) => {
  const ran = await run(['--import', withoutNats, cli, 'status', '--server', 'nats://127.0.0.1:1'], {});
  t.is(ran.code, 2);
  t.regex(ran.err, MISSING);
});
