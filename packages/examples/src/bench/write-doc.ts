/**
 * Rewrites the generated part of docs/performance.md from a saved run's
 * `bench.json`, without measuring again (after editing the prose template,
 * say). Same rules as at the end of `npm run bench`: a partial run is
 * refused unless `--allow-partial`.
 *
 *   node packages/examples/dist/src/bench/write-doc.js out/bench/bench.json [--doc file] [--allow-partial]
 * @module
 */
import { readFileSync } from 'node:fs';
import { parseOptions } from './options.js';
import { writePerformanceDoc } from './report/performance-doc.js';
import { evaluateTargets } from './report/targets.js';
import type { BenchReport } from './results.js';

const [file, ...rest] = process.argv.slice(2);
if (!file || file.startsWith('--')) {
  console.error('usage: write-doc.js <bench.json> [--doc file] [--allow-partial]');
  process.exit(2);
}
const options = parseOptions(rest);
if (!options.doc) {
  console.error('--no-doc: there is nothing to write');
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, 'utf8')) as BenchReport;
const targets = evaluateTargets(report.results, report.peaks, report.peakPayloadBytes);
const outcome = writePerformanceDoc(options.doc!, report, targets, options.allowPartial);
if (outcome.written) {
  console.log(`${outcome.doc} rewritten from ${file} (generated part), chart ${outcome.chart}`);
} else {
  console.log(`${options.doc!} left unchanged: not a full run (--allow-partial writes it anyway):\n${outcome.reasons.map((r) => `  - ${r}`).join('\n')}`);
  process.exit(1);
}
