/**
 * The PyTorch column of the bench's protocol cases (RRef cycle, distributed
 * autograd step) comes from the anchor script torch_rref_autograd.py. Here a
 * stand-in script (run by node, in a folder given as the anchors) prints
 * what the real one prints, so the parsing is checked without PyTorch.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';

/** The runner, loaded with the anchors in `dir` and node as "python". */
async function runnerWith(script: string): Promise<typeof import('../src/bench/runner.js')> {
  const dir = mkdtempSync(join(tmpdir(), 'anchors-'));
  writeFileSync(join(dir, 'torch_rpc.py'), '');
  writeFileSync(join(dir, 'torch_rref_autograd.py'), script);
  process.env.TENSORBUS_ANCHORS_DIR = dir;
  process.env.TENSORBUS_PYTHON = process.execPath;
  return import('../src/bench/runner.js');
}

test.serial('bench - the PyTorch column of the protocol cases is the anchor script\'s calls/s for rref and its median for autograd', async (t) => {
  const { runPytorchCase } = await runnerWith(
    [
      'console.log("[W] some log line");',
      'console.log(JSON.stringify({ system: "pytorch-rpc-tensorpipe", case: "rref", calls_per_s: 2950.5 }));',
      'console.log(JSON.stringify({ system: "pytorch-rpc-tensorpipe", case: "autograd", median_us: 1180 }));',
    ].join('\n'),
  );
  const { CASES } = await import('../src/bench/cases.js');
  const protocolCases = CASES.filter((c) => c.kind === 'rref' || c.kind === 'autograd');
  t.is(protocolCases.length, 2);
  const figures = [];
  for (const c of protocolCases) figures.push([c.id, await runPytorchCase(c, false)]);
  t.deepEqual(figures, [
    ['rref', { perSecond: 2950.5 }],
    ['autograd', { medianMs: 1.18 }],
  ]);
});

test.serial('bench - a protocol figure the anchor script does not print fails the PyTorch run, not a silent gap', async (t) => {
  const { runPytorchCase } = await runnerWith('console.log(JSON.stringify({ system: "pytorch-rpc-tensorpipe", case: "rref", calls_per_s: 3000 }));');
  const { CASES } = await import('../src/bench/cases.js');
  await t.throwsAsync(runPytorchCase(CASES.find((c) => c.kind === 'autograd')!, false), { message: /printed no autograd figure/ });
});
