/**
 * The browser build of @tensorbus/actors: a page's bundler resolves it
 * through the package's "browser" export condition and "browser" field, and
 * gets every public name of the Node entry but the XML-RPC gateway's, with
 * no `node:` module on its path.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import * as forBrowser from '../src/browser.js';
import * as forNode from '../src/index.js';

/** The gateway's names: an HTTP server, which a page cannot run. */
const GATEWAY_ONLY = ['DEFAULT_GATEWAY_LIMITS', 'FAULT_CODES', 'startGateway'];

test('browser entry - exports every public name of the Node entry but the gateway\'s', (t) => {
  const missing = Object.keys(forNode).filter((name) => !(name in forBrowser));
  t.deepEqual(missing.sort(), GATEWAY_ONLY);
  for (const name of Object.keys(forBrowser)) t.is((forBrowser as Record<string, unknown>)[name], (forNode as Record<string, unknown>)[name], name);
});

test('browser entry - a page bundle of @tensorbus/actors pulls in no node: module and takes the platform twins', async (t) => {
  const result = await build({
    stdin: { contents: "export * from '@tensorbus/actors';", resolveDir: fileURLToPath(new URL('.', import.meta.url)), loader: 'js' },
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    write: false,
    metafile: true,
    logLevel: 'silent',
  });
  const inputs = Object.keys(result.metafile.inputs);
  t.deepEqual(inputs.filter((input) => input.startsWith('node:')), []);
  t.deepEqual(inputs.filter((input) => /actors\/dist\/src\/gateway\//.test(input)), [], 'no gateway');
  for (const seam of ['crypto', 'async-scope', 'process']) {
    t.true(inputs.some((input) => input.endsWith(`actors/dist/src/platform/${seam}.browser.js`)), `${seam}: the browser twin`);
    t.false(inputs.some((input) => input.endsWith(`actors/dist/src/platform/${seam}.js`)), `${seam}: not the Node module`);
  }
});
