import test from 'ava';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatedMarkers, replaceGeneratedPart } from '../src/bench/report/generated-part.js';

const markers = generatedMarkers('npm run bench:x', 'x.ts');

test('generated part - a run rewrites only what lies between its markers, the prose around is kept', (t) => {
  const doc = join(mkdtempSync(join(tmpdir(), 'tb-doc-')), 'x.md');
  writeFileSync(doc, `# X\n\nprose before\n\n${markers.begin}\n\n| old | 999 µs |\n\n${markers.end}\n\nprose after\n`);
  t.is(replaceGeneratedPart(doc, markers, '| new | 12 µs |'), undefined);
  const text = readFileSync(doc, 'utf8');
  t.is(text, `# X\n\nprose before\n\n${markers.begin}\n\n| new | 12 µs |\n\n${markers.end}\n\nprose after\n`);
});

test('generated part - a doc without its markers is left as it is, and says why', (t) => {
  const doc = join(mkdtempSync(join(tmpdir(), 'tb-doc-')), 'x.md');
  writeFileSync(doc, '# X\n\nno markers here\n');
  t.regex(replaceGeneratedPart(doc, markers, '| new |') ?? '', /has no generated part/);
  t.is(readFileSync(doc, 'utf8'), '# X\n\nno markers here\n');
  t.regex(replaceGeneratedPart(join(doc, 'missing.md'), markers, '| new |') ?? '', /does not exist/);
});
