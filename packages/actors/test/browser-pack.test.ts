/**
 * The packages as a user gets them: `npm pack` of @tensorbus/core,
 * @tensorbus/nats-server, @tensorbus/direct-routes, @tensorbus/nats-transport
 * and @tensorbus/actors, installed from the
 * tarballs into a fresh project outside the repository (npm install, offline
 * where npm's cache has what it needs). From that project: a Node script
 * runs a call, and a page written as docs/browser.md says, bundled with
 * esbuild for the browser and served with TensorFlow.js's WebAssembly files,
 * becomes a worker in headless Chromium that a Node worker (another process,
 * also of the fresh project) calls and that calls it.
 */
import test from 'ava';
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startNatsServer, type NatsServer } from '@tensorbus/nats-transport/testing';
import { openPage, servePage, type BrowserPage, type ServedPage } from './browser.js';

const run = promisify(execFile);
const repository = fileURLToPath(new URL('../../../../', import.meta.url));
const fixtures = fileURLToPath(new URL('../../test/fixtures/fresh-project/', import.meta.url));
const PACKAGES = ['core', 'nats-server', 'direct-routes', 'nats-transport', 'actors'];

/** The environment without npm's own variables (set when the tests run under `npm test`), which would configure the child npm. */
function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')));
  return { ...env, ...extra };
}

let work: string;
let project: string;
let server: NatsServer;

test.before(async () => {
  work = mkdtempSync(join(tmpdir(), 'tb-fresh-'));
  const tarballs = join(work, 'tarballs');
  project = join(work, 'project');
  const workspaces = PACKAGES.flatMap((name) => ['-w', `packages/${name}`]);
  mkdirSync(tarballs);
  mkdirSync(project);
  await run('npm', ['pack', ...workspaces, '--pack-destination', tarballs], { cwd: repository, env: cleanEnv() });
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'fresh-tensorbus-user', private: true, type: 'module' }, null, 2));
  const files = readdirSync(tarballs).filter((file) => file.endsWith('.tgz')).map((file) => join(tarballs, file));
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', ...files], { cwd: project, env: cleanEnv(), maxBuffer: 16 << 20 });
  for (const file of readdirSync(fixtures)) copyFileSync(join(fixtures, file), join(project, file));
  server = await startNatsServer({ websocket: { quiet: true } });
});

test.after.always(async () => {
  await server?.stop();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

/** Runs `script` of the fresh project with node; its exit code and the JSON lines it printed. */
function runScript(script: string, namespace: string): { exited: Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }>; lines: Record<string, unknown>[] } {
  const child = spawn(process.execPath, [script], { cwd: project, env: cleanEnv({ NATS_URL: server.url, TB_NAMESPACE: namespace }), stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Record<string, unknown>[] = [];
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    let newline: number;
    while ((newline = stdout.indexOf('\n')) >= 0) {
      const line = stdout.slice(0, newline);
      stdout = stdout.slice(newline + 1);
      if (line.startsWith('{')) lines.push(JSON.parse(line) as Record<string, unknown>);
    }
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const exited = new Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }>((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, lines, stderr });
    }),
  );
  return { exited, lines };
}

/** The bare package names `file` imports (static and dynamic imports of string literals). */
function importedPackages(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const names = new Set<string>();
  for (const match of text.matchAll(/(?:^|[;\s])(?:import|export)\s[^'"]*?\sfrom\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)|^import\s*['"]([^'"]+)['"]/gm)) {
    const specifier = match[1] ?? match[2] ?? match[3]!;
    if (specifier.startsWith('.') || specifier.startsWith('node:')) continue;
    names.add(specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!);
  }
  return [...names];
}

test.serial('browser pack - every package an installed package imports is declared in its package.json (dependencies, or peerDependencies for the optional ones)', (t) => {
  for (const name of PACKAGES) {
    const dir = join(project, 'node_modules', '@tensorbus', name);
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; dependencies?: object; peerDependencies?: object };
    const declared = new Set([manifest.name, ...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.peerDependencies ?? {})]);
    const files = readdirSync(join(dir, 'dist'), { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.js'));
    t.true(files.includes(join('src', 'index.js')), `${manifest.name} ships its build`);
    const undeclared = files.flatMap((file) => importedPackages(join(dir, 'dist', file)).filter((pkg) => !declared.has(pkg)).map((pkg) => `${file} imports ${pkg}`));
    t.deepEqual(undeclared, [], manifest.name);
  }
});

test.serial('browser pack - a Node script of a fresh project that installed the packages from npm pack imports them and runs a call', async (t) => {
  const { code, lines, stderr } = await runScript('node-call.js', `freshnode${process.pid}`).exited;
  t.is(code, 0, stderr);
  t.deepEqual(lines, [{ squared: [1, 4, 9], backend: 'wasm' }]);
});

test.serial('browser pack - a page of the fresh project, bundled with esbuild for the browser (no node: import), becomes a worker in Chromium: a Node worker calls it and it calls the Node worker', async (t) => {
  const namespace = `freshtab${process.pid}`;
  let served: ServedPage | undefined;
  let tab: BrowserPage | undefined;
  const worker = runScript('node-worker.js', namespace);
  try {
    // Bundled from the fresh project: its imports resolve to the installed tarballs, the WebAssembly files come from its node_modules.
    served = await servePage(join(project, 'page.js'), 'tensorbus fresh project', { project });
    const bundle = await (await fetch(`${served.url}bundle.js`)).text();
    t.notRegex(bundle, /\bfrom\s*["']node:|\bimport\(\s*["']node:|\brequire\(\s*["']node:/, 'the bundle imports no node: module');
    for (const wasm of ['tfjs-backend-wasm.wasm', 'tfjs-backend-wasm-simd.wasm']) t.is((await fetch(`${served.url}${wasm}`)).status, 200, wasm);
    const ready = Date.now() + 30_000;
    while (!worker.lines.some((line) => line.event === 'ready') && Date.now() < ready) await new Promise((resolve) => setTimeout(resolve, 50));
    tab = await openPage(`${served.url}?ws=${encodeURIComponent(server.wsUrl!)}&ns=${namespace}`);
    await tab.page.waitForFunction('window.result !== undefined', undefined, { timeout: 60_000 });
    t.deepEqual(await tab.evaluate('window.result'), { squared: [1, 4, 9], backend: 'wasm' }, 'the tab called the Node worker, on the WebAssembly backend');
    const { code, lines, stderr } = await worker.exited;
    t.is(code, 0, stderr);
    t.deepEqual(lines, [
      { event: 'ready', backend: 'wasm' },
      { event: 'called-tab', doubled: [2, 4, 6], inPage: true, backend: 'wasm' },
      { event: 'served-tab', square: 1, tensors: 0 },
    ]);
  } finally {
    await tab?.close();
    await served?.close();
  }
});
