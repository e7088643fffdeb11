import test from 'ava';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DOC_BEGIN, DOC_END } from '../src/bench/report/performance-doc.js';

const main = fileURLToPath(new URL('../src/bench/main.js', import.meta.url));

interface Result {
  caseId: string;
  system: string;
  medianMs?: number;
  n?: number;
  skipped?: string;
}

test('examples - bench: a quick run measures no-op and 4 KB round trips over NATS, in-process and raw TCP, and writes JSON, markdown and chart', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'tb-bench-'));
  const doc = join(out, 'performance.md');
  const docText = `# Performance\n\n${DOC_BEGIN}\nthe last full run\n${DOC_END}\n`;
  writeFileSync(doc, docText);
  const child = spawn(process.execPath, [main, '--quick', '--only', 'noop,4KB', '--systems', 'tensorbus-nats,tensorbus-local,tcp', '--out', out, '--doc', doc], {
    env: { ...process.env, NATS_URL: '', TENSORBUS_QUIET: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.is(code, 0, stdout);
  t.regex(stdout, /identity 4 KB, block 1\/\d+:\n\s+tensorbus \(NATS, 2 processes\) \.\.\. [\d.]+ (µs|ms)/, 'progress names the case and the system');

  const report = JSON.parse(readFileSync(join(out, 'bench.json'), 'utf8')) as { results: Result[]; tfjsBackend: string; machine: { cpuCount: number } };
  t.truthy(report.tfjsBackend);
  t.true(report.machine.cpuCount > 0);
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

  const markdown = readFileSync(join(out, 'bench.md'), 'utf8');
  for (const row of ['no-op round trip', 'identity 4 KB']) {
    t.regex(markdown, new RegExp(`\\| ${row} \\| [\\d.]+ (µs|ms) \\| [\\d.]+ (µs|ms) \\| [\\d.]+ (µs|ms) \\| [\\d.]+x \\|`), `${row}: a figure per system and the ratio to raw TCP`);
  }
  t.regex(markdown, /latency ≤1\.2x raw NATS: \*\*n\/a\*\*/, 'a target whose peer did not run is not evaluated');
  t.true(existsSync(join(out, 'bench-rtt.svg')));
  t.regex(readFileSync(join(out, 'bench-rtt.svg'), 'utf8'), /raw TCP \(Node\)/);
  t.regex(stdout, /performance\.md left unchanged: not a full run[^]*- a quick run/, 'a partial run says why it does not write the doc');
  t.is(readFileSync(doc, 'utf8'), docText, 'and leaves it as it was');
});
