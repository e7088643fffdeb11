import test from 'ava';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DOC_BEGIN, DOC_END } from '../src/bench/report/performance-doc.js';
import { benchDirectory, runBench } from './run-examples.js';

test('examples - bench: a quick run measures no-op and 4 KB round trips over NATS, in-process and raw TCP, and writes JSON, markdown and chart', async (t) => {
  const out = benchDirectory('tb-bench-');
  const doc = join(out, 'performance.md');
  const docText = `# Performance\n\n${DOC_BEGIN}\nthe last full run\n${DOC_END}\n`;
  writeFileSync(doc, docText);
  const run = await runBench(out, ['--quick', '--only', 'noop,4KB', '--systems', 'tensorbus-nats,tensorbus-local,tcp', '--doc', doc]);
  const { stdout } = run;
  t.is(run.code, 0, stdout);
  t.regex(stdout, /identity 4 KB, block 1\/\d+:\n\s+tensorbus \(NATS, 2 processes\) \.\.\. [\d.]+ (µs|ms)/, 'progress names the case and the system');

  const report = run.report();
  t.truthy(report.tfjsBackend);
  t.true((report.machine.cpuCount as number) > 0);
  for (const caseId of ['noop', '4KB']) {
    for (const system of ['tensorbus-nats', 'tensorbus-local', 'tcp']) {
      const r = report.results.find((x) => x.caseId === caseId && x.system === system);
      t.truthy(r, `${caseId} on ${system} is reported`);
      t.is(r?.skipped, undefined, `${caseId} on ${system} ran`);
      t.true(Number.isFinite(r?.medianMs) && r!.medianMs! > 0, `${caseId} on ${system}: median ${r?.medianMs}`);
      t.true((r?.n ?? 0) >= 100, `${caseId} on ${system}: ${r?.n} repetitions`);
    }
  }
  t.false(report.results.some((r) => r.caseId === '400MB'), 'only the cases asked for run');

  const markdown = run.file('bench.md');
  for (const row of ['no-op round trip', 'identity 4 KB']) {
    t.regex(markdown, new RegExp(`\\| ${row} \\| [\\d.]+ (µs|ms) \\| [\\d.]+ (µs|ms) \\| [\\d.]+ (µs|ms) \\| [\\d.]+x \\|`), `${row}: a figure per system and the ratio to raw TCP`);
  }
  t.regex(markdown, /latency ≤1\.2x raw NATS: \*\*n\/a\*\*/, 'a target whose peer did not run is not evaluated');
  t.true(existsSync(join(out, 'bench-rtt.svg')));
  t.regex(run.file('bench-rtt.svg'), /raw TCP \(Node\)/);
  t.regex(stdout, /performance\.md left unchanged: not a full run[^]*- a quick run/, 'a partial run says why it does not write the doc');
  t.is(readFileSync(doc, 'utf8'), docText, 'and leaves it as it was');
});
