/**
 * The main bench's browser rows: a quick run of `npm run bench` with the
 * browser systems (a tab in headless Chromium calling a Node worker and
 * called by one, over the nats-server's WebSocket port) beside Node to Node
 * through the bus alone, on the no-op and 4 MB cases, in one run.
 */
import test from 'ava';
import { benchDirectory, runBench } from './run-examples.js';

const BROWSER_SYSTEMS = ['tab-to-node', 'node-to-tab', 'tensorbus-nats-bus'];

test('examples - bench: one run measures no-op and 4 MB round trips tab → Node and Node → tab over WebSocket beside Node → Node through the bus, with the same repetitions, in a table of their own', async (t) => {
  const run = await runBench(benchDirectory('tb-bench-browser-'), ['--quick', '--only', 'noop,4MB', '--systems', BROWSER_SYSTEMS.join(','), '--no-doc', '--no-baseline']);
  const { stdout } = run;
  t.is(run.code, 0, stdout);
  t.regex(stdout, /nats-server [^\n]* and ws:\/\/127\.0\.0\.1:\d+, max_payload 64 MB/, 'one nats-server, with a WebSocket port on loopback');

  const report = run.report();
  for (const caseId of ['noop', '4MB']) {
    const rows = BROWSER_SYSTEMS.map((system) => report.results.find((r) => r.caseId === caseId && r.system === system));
    for (const [i, r] of rows.entries()) {
      t.is(r?.skipped, undefined, `${caseId} on ${BROWSER_SYSTEMS[i]} ran`);
      t.true(Number.isFinite(r?.medianMs) && r!.medianMs! > 0, `${caseId} on ${BROWSER_SYSTEMS[i]}: median ${r?.medianMs}`);
    }
    t.is(new Set(rows.map((r) => r?.n)).size, 1, `${caseId}: the same number of timed calls on every row (${rows.map((r) => r?.n).join(', ')})`);
  }
  t.false(report.results.some((r) => !['noop', '4MB'].includes(r.caseId)), 'only the cases asked for run');

  const markdown = run.file('bench.md');
  const section = markdown.slice(markdown.indexOf('## A browser tab over WebSocket'));
  t.true(markdown.includes('## A browser tab over WebSocket'), markdown);
  t.regex(section, /\| case \| tab → Node \| Node → tab \| Node → Node, bus \|\n/);
  const time = '[\\d.]+ (µs|ms|s)';
  for (const row of ['no-op round trip', 'identity 4 MB']) t.regex(section, new RegExp(`\\| ${row} \\| ${time} \\| ${time} \\| ${time} \\|\\n`), `${row}: a figure per row`);
  t.notRegex(markdown.slice(0, markdown.indexOf('## A browser tab over WebSocket')), /tab → Node/, 'the browser rows are not columns of the main table');
});
