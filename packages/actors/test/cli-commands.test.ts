/**
 * The `tensorbus` command across its packages: `gateway` and `dashboard` live
 * in `@tensorbus/gateway` and `@tensorbus/dashboard`, loaded when they run,
 * so a worker that installs `@tensorbus/actors` installs neither an XML
 * parser nor a JWT library; without them the commands exit 2 saying what to
 * install ("absent" is real: module hooks make the packages unresolvable, as
 * Node reports a package that is not installed). Every command that talks to
 * a bus names its server with `--server` (gateway's `--nats` kept as an alias).
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { parseArgs } from '../src/cli/args.js';
import { runNode as run } from './launcher-helpers.js';

const packageDir = fileURLToPath(new URL('../../', import.meta.url));
const cli = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const envWorker = fileURLToPath(new URL('./fixtures/env-worker.js', import.meta.url));
const withoutCommandPackages = fileURLToPath(new URL('./fixtures/no-command-packages.js', import.meta.url));

/** Packages of the gateway and the dashboard that a worker must not install. */
const NOT_FOR_WORKERS = ['jose', 'fast-xml-parser', '@tensorbus/gateway', '@tensorbus/dashboard'];

test('packaging - @tensorbus/actors depends on neither jose nor fast-xml-parser, and no source file imports them or the gateway and dashboard packages', (t) => {
  const pkg = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as Record<string, Record<string, unknown> | undefined>;
  for (const name of NOT_FOR_WORKERS) t.false(name in (pkg.dependencies ?? {}), `${name} is not a dependency`);
  for (const name of ['@tensorbus/gateway', '@tensorbus/dashboard']) t.deepEqual(pkg.peerDependenciesMeta?.[name], { optional: true }, `${name} is an optional peer`);
  const offenders: string[] = [];
  for (const entry of readdirSync(join(packageDir, 'src'), { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts')) continue;
    const file = join(entry.parentPath, entry.name);
    const text = readFileSync(file, 'utf8');
    for (const name of NOT_FOR_WORKERS) {
      if (new RegExp(`(from|import)\\s*\\(?\\s*['"]${name}(/[^'"]*)?['"]`).test(text)) offenders.push(`${file.slice(packageDir.length)} imports ${name}`);
    }
  }
  t.deepEqual(offenders, []);
});

for (const [command, packageName] of [['gateway', '@tensorbus/gateway'], ['dashboard', '@tensorbus/dashboard']] as const) {
  test(`cli - without ${packageName}, \`tensorbus ${command}\` exits 2 saying what to install`, async (t) => {
    const ran = await run(['--import', withoutCommandPackages, cli, command, '--server', 'nats://127.0.0.1:1']);
    t.is(ran.code, 2, ran.err);
    t.regex(ran.err, new RegExp(`^tensorbus: \`tensorbus ${command}\` needs ${packageName}, which is not installed: npm i ${packageName} \\(beside @tensorbus/actors\\)`, 'm'));
  });
}

test('cli - without @tensorbus/dashboard, `tensorbus launch --dashboard` exits 2 saying what to install, before it starts anything', async (t) => {
  const ran = await run(['--import', withoutCommandPackages, cli, 'launch', '-n', '1', '--dashboard', '0', envWorker]);
  t.is(ran.code, 2, ran.err);
  t.regex(ran.err, /`tensorbus launch --dashboard` needs @tensorbus\/dashboard, which is not installed: npm i @tensorbus\/dashboard/);
  t.notRegex(ran.err, /started an embedded nats-server/);
  t.notRegex(ran.out, /ok/, 'no worker ran');
});

test('cli - without the command packages, `tensorbus launch` (no --dashboard) runs its workers', async (t) => {
  const ran = await run(['--import', withoutCommandPackages, cli, 'launch', '-n', '1', envWorker]);
  t.is(ran.code, 0, ran.err);
  t.regex(ran.out, /\{"ok":true\}/);
});

test('cli - every command names its server with --server (or -s), NATS_URL by default; gateway keeps --nats as an alias', (t) => {
  const saved = process.env.NATS_URL;
  process.env.NATS_URL = 'nats://env:4222';
  try {
    for (const command of ['status', 'dashboard', 'gateway']) {
      t.is((parseArgs([command]) as { server?: string }).server, 'nats://env:4222', `${command}: NATS_URL`);
      t.is((parseArgs([command, '--server', 'nats://a:1']) as { server?: string }).server, 'nats://a:1', `${command} --server`);
      t.is((parseArgs([command, '-s', 'nats://b:2']) as { server?: string }).server, 'nats://b:2', `${command} -s`);
    }
    t.is((parseArgs(['gateway', '--nats', 'nats://c:3']) as { server?: string }).server, 'nats://c:3', 'gateway --nats');
    t.like(parseArgs(['launch', 'x.js']), { server: 'nats://env:4222' });
    t.like(parseArgs(['launch', '--server', 'nats://a:1', '-n', '2', 'x.js', '--server', 'theirs']), { server: 'nats://a:1', count: 2, script: 'x.js', scriptArgs: ['--server', 'theirs'] });
    t.like(parseArgs(['launch', '-s', 'nats://b:2', 'x.js']), { server: 'nats://b:2' });
    process.env.NATS_URL = '';
    t.like(parseArgs(['launch', 'x.js']), { server: undefined }, 'an empty NATS_URL names no server');
  } finally {
    if (saved === undefined) delete process.env.NATS_URL;
    else process.env.NATS_URL = saved;
  }
});

test('cli - `tensorbus launch --server URL` runs its workers on that server instead of starting one', async (t) => {
  const server = await sharedNatsServer();
  const ran = await run([cli, 'launch', '--server', server.url, '--namespace', `cli-server-${process.pid}`, '-n', '1', envWorker]);
  t.is(ran.code, 0, ran.err);
  t.regex(ran.out, /\{"ok":true\}/);
  t.notRegex(ran.err, /started an embedded nats-server/);
});
