/**
 * The browser build of @tensorbus/actors: a page's bundler resolves it
 * through the package's "browser" export condition and "browser" field, and
 * gets every public name of the Node entry, with no `node:` module on its
 * path (and no XML parser or JWT library: those are @tensorbus/gateway's).
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import * as forBrowser from '../src/browser.js';
import * as forNode from '../src/index.js';

test('browser entry - exports every public name of the Node entry, and no other', (t) => {
  t.deepEqual(Object.keys(forBrowser).sort(), Object.keys(forNode).sort());
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
  t.deepEqual(inputs.filter((input) => /node_modules\/(jose|fast-xml-parser)\//.test(input)), [], 'no XML parser, no JWT library');
  for (const seam of ['crypto', 'async-scope', 'process']) {
    t.true(inputs.some((input) => input.endsWith(`actors/dist/src/platform/${seam}.browser.js`)), `${seam}: the browser twin`);
    t.false(inputs.some((input) => input.endsWith(`actors/dist/src/platform/${seam}.js`)), `${seam}: not the Node module`);
  }
});
