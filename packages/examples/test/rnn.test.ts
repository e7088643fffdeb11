/**
 * The model-parallel RNN example end to end: `ps` and trainers in their own
 * processes through the launcher; the language model learns, every autograd
 * context is released and every tensor freed on both sides, and the outputs
 * are written.
 */
import test, { type ExecutionContext } from 'ava';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunSummary } from '../src/rnn/results.js';
import type { TrainerReport } from '../src/rnn/server.js';
import { launchExample } from './run-examples.js';


interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  out: string;
  result: RunSummary & { trainers: TrainerReport[] };
}

async function launch(names: string[], args: string[]): Promise<Run> {
  const out = mkdtempSync(join(tmpdir(), 'tb-rnn-'));
  const { code, stdout, stderr } = await launchExample(names, 'rnn/main.js', [...args, '--out', out]);
  const path = join(out, 'rnn.json');
  const result = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Run['result']) : ({ trainers: [] } as unknown as Run['result']);
  return { code, stdout, stderr, out, result };
}

/** The trainer's validation loss fell clearly, and nothing was left behind on it. */
function assertLearnedAndClean(t: ExecutionContext, report: TrainerReport, epochs: number): void {
  const first = report.curve[0]!;
  const last = report.curve[report.curve.length - 1]!;
  t.is(last.epoch, epochs);
  t.true(last.validLoss < 0.8 * first.validLoss, `${report.name}: validation loss went from ${first.validLoss} to ${last.validLoss}`);
  t.true(last.trainLoss! < report.curve[1]!.trainLoss!, `${report.name}: training loss went from ${report.curve[1]!.trainLoss} to ${last.trainLoss}`);
  t.is(report.contextsHeld, 0, `${report.name} holds no autograd context`);
  t.is(report.tensors.afterLastEpoch, report.tensors.afterFirstEpoch, `${report.name}: no tensor accumulates over epochs`);
  t.is(report.tensors.after, report.tensors.before, `${report.name}: every tensor freed once the model is released`);
  t.is(report.samples.length, 5);
  for (const { prompt, text } of report.samples) t.true(text.startsWith(prompt) && text.split(' ').length > prompt.split(' ').length, `generated '${text}'`);
}

test('examples - rnn: embedding and decoder on ps, LSTM on the trainer; the language model learns and leaves nothing behind', async (t) => {
  const { code, stdout, stderr, out, result } = await launch(['ps', 'trainer'], ['--epochs', '3']);
  t.is(code, 0, stdout + stderr);
  t.regex(stdout, /\[trainer\] epoch\s+3\/3 \[#+\] 100%\s+train loss \d+\.\d+ \(perplexity [\d.]+\)\s+valid loss/, 'progress is shown per epoch');
  t.regex(stdout, /\[trainer\]\s+the girls\s+→ the girls/, 'generated words are printed');
  t.notRegex(stderr, /warn|leak|error/i, 'no warnings');
  t.is(result.trainers.length, 1);
  assertLearnedAndClean(t, result.trainers[0]!, 3);
  t.is(result.ps.contextsHeld, 0, 'ps holds no autograd context');
  t.is(result.ps.tensorsAfter, result.ps.tensorsBefore, 'ps freed every tensor');
  t.true(result.corpus.vocabulary >= 50 && result.corpus.vocabulary <= 300);
  t.regex(readFileSync(join(out, 'rnn.svg'), 'utf8'), /validation loss/);
});

test('examples - rnn: two trainers, each with its own modules on one ps', async (t) => {
  const { code, stdout, stderr, out, result } = await launch(['ps', 'trainer1', 'trainer2'], ['--epochs', '3']);
  t.is(code, 0, stdout + stderr);
  t.deepEqual(
    result.trainers.map((r) => r.name),
    ['trainer1', 'trainer2'],
  );
  for (const report of result.trainers) assertLearnedAndClean(t, report, 3);
  t.is(result.ps.contextsHeld, 0);
  t.is(result.ps.tensorsAfter, result.ps.tensorsBefore);
  t.regex(readFileSync(join(out, 'rnn.svg'), 'utf8'), /validation loss \(trainer2\)/);
});
