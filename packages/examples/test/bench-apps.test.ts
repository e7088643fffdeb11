/**
 * The bench's application cases run this build a second time with busy
 * polling off (it is on by default), in the same rounds, and the application table shows both
 * and their ratio (issue 38: polling must never cost an application). A
 * stand-in build (a launcher that writes what the examples write, its rate
 * read from the polling setting it was given) checks the wiring without
 * running the examples. The rounds follow a balanced design, so no build
 * always runs in the same place or right after the same other.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { inTurn, runApps, type Contender } from '../src/bench/apps/run-apps.js';
import { balancedOrder } from '../src/bench/stats.js';
import { copyExamplePrograms } from '../src/bench/apps/baseline-build.js';
import { appSection, roundRatios } from '../src/bench/apps/app-report.js';
import { MAX_APP_RUNS, parseOptions } from '../src/bench/options.js';
import { APP_CASES, APP_LENGTHS } from '../src/bench/apps/app-cases.js';

/** A build root whose launcher answers each example with rate 10, or 7 when busy polling is turned off. */
function standInBuild(): string {
  const root = mkdtempSync(join(tmpdir(), 'apps-build-'));
  mkdirSync(join(root, 'packages/actors/dist/src/cli'), { recursive: true });
  writeFileSync(
    join(root, 'packages/actors/dist/src/cli/main.js'),
    `
    const fs = require('node:fs');
    const path = require('node:path');
    let rate = process.env.TENSORBUS_BUSY_POLL_US === '0' ? 7 : 10;
    const args = process.argv.slice(2);
    const out = args[args.indexOf('--out') + 1];
    const script = args.find((a) => a.endsWith('main.js'));
    // A copy of this build's program (baseline-build.ts) answers with 5.
    if (script.includes('/.programs/')) rate = 5;
    if (script.includes('/rl/')) fs.writeFileSync(path.join(out, 'rl.json'), JSON.stringify({ observers: 1, seconds: 1, curve: [{ meanReward: rate }] }));
    if (script.includes('/parameter-server/')) console.log('10 epochs of ' + rate + ' batched updates\\nafter 10 epochs in 10 s');
    if (script.includes('/pipeline/')) console.log('micro-batches 4 (of 8 samples): throughput ' + rate + ' samples/s');
    `,
  );
  writeFileSync(join(root, 'packages/actors/dist/src/cli/package.json'), '{ "type": "commonjs" }');
  return root;
}

/** Runs `fn` with console output swallowed (the runners print progress). */
async function quietly<T>(fn: () => Promise<T>): Promise<T> {
  const log = console.log;
  const write = process.stdout.write.bind(process.stdout);
  console.log = () => undefined;
  process.stdout.write = (() => true) as typeof process.stdout.write;
  try {
    return await fn();
  } finally {
    console.log = log;
    process.stdout.write = write;
  }
}

test.serial('bench - the contenders of an application case take turns starting a round, and a failed one runs no more', async (t) => {
  const order: string[] = [];
  const contender = (system: Contender['system'], rates: number[]): Contender => ({
    system,
    title: system,
    unit: '/s',
    run: async () => {
      order.push(system);
      const rate = rates.shift();
      if (rate === undefined) throw new Error('gave up');
      return rate;
    },
  });
  const results = await quietly(() => inTurn('pipeline', [contender('tensorbus', [1, 5, 3]), contender('no-poll', [2, 2, 2]), contender('baseline', [4])], 3));
  // Rounds: 0 1 2, 2 1 0, 1 2 0: the baseline failed in round 1 (its second run) and runs no more.
  t.deepEqual(order, ['tensorbus', 'no-poll', 'baseline', 'baseline', 'no-poll', 'tensorbus', 'no-poll', 'tensorbus']);
  t.deepEqual(results.find((r) => r.system === 'tensorbus'), { caseId: 'pipeline', system: 'tensorbus', perSecond: 3, runs: [1, 5, 3] });
  t.is(results.find((r) => r.system === 'baseline')?.skipped, 'failed: gave up');
});

test.serial('bench - every application case also runs this build with busy polling off (on by default), and the table gives both and their ratio', async (t) => {
  const root = standInBuild();
  const results = await quietly(() => runApps({ label: 'this build', root }, undefined, { quick: true, pytorch: false }));
  for (const id of ['rl', 'parameter-server', 'pipeline']) {
    t.is(results.find((r) => r.caseId === id && r.system === 'tensorbus')?.perSecond, 10, `${id} as built (polling on)`);
    t.is(results.find((r) => r.caseId === id && r.system === 'no-poll')?.perSecond, 7, `${id} with TENSORBUS_BUSY_POLL_US=0`);
  }
  const table = appSection({ results }).join('\n');
  t.regex(table, /\| tensorbus \| tensorbus, polling off \| baseline \|/);
  t.regex(table, /\| RL example, 4 observers \(environment steps\/s\) \| 10\.0\/s \| 7\.0\/s \| — \| — \| 1\.4x \|/);
});

test.serial('bench - --app-runs N runs every build N times per application case, and a bad N is refused', async (t) => {
  t.is(parseOptions([]).appRuns, undefined);
  t.is(parseOptions(['--only', 'apps', '--app-runs', '9']).appRuns, 9);
  for (const bad of [['--app-runs'], ['--app-runs', '0'], ['--app-runs', '2.5'], ['--app-runs', 'many'], ['--app-runs', String(MAX_APP_RUNS + 1)]]) {
    t.throws(() => parseOptions(bad), { message: /--app-runs needs a whole number/ }, bad.join(' '));
  }
  const root = standInBuild();
  const results = await quietly(() => runApps({ label: 'this build', root }, { label: 'baseline', root }, { quick: true, pytorch: false, runs: 3 }));
  t.is(results.length, 9);
  for (const r of results) t.deepEqual(r.runs, r.system === 'no-poll' ? [7, 7, 7] : [10, 10, 10], `${r.caseId} ${r.system}`);
});

test.serial('bench - each ratio of the application table shows the range of the rounds\' own ratios', (t) => {
  const results = [
    { caseId: 'pipeline' as const, system: 'tensorbus' as const, perSecond: 100, runs: [90, 100, 120] },
    { caseId: 'pipeline' as const, system: 'no-poll' as const, perSecond: 100, runs: [100, 100] },
    { caseId: 'pipeline' as const, system: 'baseline' as const, perSecond: 100, runs: [100, 80, 100] },
  ];
  // Paired by round: 90/100, 100/80, 120/100.
  t.deepEqual(roundRatios(results, 'pipeline', 'tensorbus', 'baseline'), [0.9, 1.25, 1.2]);
  // Runs that do not pair (a contender that stopped early) give no range.
  t.deepEqual(roundRatios(results, 'pipeline', 'tensorbus', 'no-poll'), []);
  const row = appSection({ results }).find((line) => line.startsWith('| pipeline'))!;
  t.regex(row, /\| 1\.0x \| 1\.0x<br>rounds 0\.90–1\.25 \| — \|/);
});

test.serial("bench - the baseline runs this build's copy of the RL and pipeline examples on its own libraries, and its own parameter server", async (t) => {
  const repo = mkdtempSync(join(tmpdir(), 'apps-repo-'));
  for (const part of ['src/pipeline', 'dist/src/pipeline']) mkdirSync(join(repo, 'packages/examples', part), { recursive: true });
  writeFileSync(join(repo, 'packages/examples/package.json'), '{ "type": "module" }');
  writeFileSync(join(repo, 'packages/examples/dist/src/pipeline/main.js'), 'new');
  const baselineRoot = standInBuild();
  mkdirSync(join(baselineRoot, '.programs/packages/examples/dist/src/old'), { recursive: true });
  const programsRoot = copyExamplePrograms(repo, baselineRoot);
  t.is(programsRoot, join(baselineRoot, '.programs'));
  t.is(readFileSync(join(programsRoot, 'packages/examples/dist/src/pipeline/main.js'), 'utf8'), 'new');
  t.true(existsSync(join(programsRoot, 'packages/examples/package.json')));
  t.false(existsSync(join(programsRoot, 'packages/examples/dist/src/old')), 'an earlier copy is replaced');

  const results = await quietly(() =>
    runApps({ label: 'this build', root: standInBuild() }, { label: 'baseline', root: baselineRoot, programsRoot }, { quick: true, pytorch: false }),
  );
  const baseline = (id: string) => results.find((r) => r.caseId === id && r.system === 'baseline')?.perSecond;
  t.is(baseline('rl'), 5);
  t.is(baseline('pipeline'), 5);
  t.is(baseline('parameter-server'), 10);
  const table = appSection({ baseline: { rev: 'base', commit: 'base' }, sameProgram: ['rl', 'pipeline'], results }).join('\n');
  t.regex(table, /the baseline running this build's copy of the RL and pipeline examples on its own libraries/);
  t.regex(appSection({ results }).join('\n'), /the baseline running its own copy of each example/);
});

test('bench - the application rounds are balanced: each contender runs in each place and right after each other equally often', (t) => {
  const tally = (n: number, rounds: number) => {
    const places = new Map<string, number>();
    const after = new Map<string, number>();
    for (let r = 0; r < rounds; r++) {
      const order = balancedOrder([...Array(n).keys()], r);
      t.deepEqual([...order].sort(), [...Array(n).keys()], `round ${r} runs each contender once`);
      order.forEach((item, place) => places.set(`${item}@${place}`, (places.get(`${item}@${place}`) ?? 0) + 1));
      for (let i = 1; i < n; i++) after.set(`${order[i - 1]}>${order[i]}`, (after.get(`${order[i - 1]}>${order[i]}`) ?? 0) + 1);
    }
    return { places, after };
  };
  // Three contenders (odd): over 6 rounds, each place twice and each ordered pair twice.
  const three = tally(3, 6);
  t.is(three.places.size, 9);
  t.true([...three.places.values()].every((c) => c === 2));
  t.is(three.after.size, 6);
  t.true([...three.after.values()].every((c) => c === 2));
  // Four (even): over 4 rounds, each place once and each ordered pair once.
  const four = tally(4, 4);
  t.is(four.places.size, 16);
  t.is(four.after.size, 12);
  t.true([...four.after.values()].every((c) => c === 1));
  // The five rounds of a full run of three: no contender always right after the same other.
  const five = tally(3, 5);
  t.is(five.after.size, 6);
});

test.serial('bench - a full run times a long stretch of training on every build (RL for seconds, as beside PyTorch), a quick run a short one, and each row of the table says which', (t) => {
  const flags = (id: string, quick: boolean) => APP_CASES.find((c) => c.id === id)!.args(quick, 'out');
  t.deepEqual(flags('rl', false), ['--max-seconds', String(APP_LENGTHS.rlSeconds), '--max-episodes', '1000000', '--out', 'out']);
  t.deepEqual(flags('rl', true), ['--max-episodes', String(APP_LENGTHS.rlQuickEpisodes), '--out', 'out']);
  t.deepEqual(flags('parameter-server', false), ['--epochs', String(APP_LENGTHS.psEpochs.full), '--out', 'out']);
  t.true(flags('pipeline', false).join(' ').includes(`--batches ${APP_LENGTHS.pipelineBatches.full} `));
  t.true(flags('pipeline', true).join(' ').includes(`--batches ${APP_LENGTHS.pipelineBatches.quick} `));
  const results = [{ caseId: 'rl' as const, system: 'tensorbus' as const, perSecond: 100, runs: [100] }];
  const stretches = Object.fromEntries(APP_CASES.map((c) => [c.id, c.stretch(false)]));
  const table = appSection({ stretches, results }).join('\n');
  t.regex(table, new RegExp(`\\| RL example, 4 observers \\(environment steps/s, the first ${APP_LENGTHS.rlSeconds} s of training\\) \\| 100/s`));
  t.regex(table, new RegExp(`\\| pipeline, 4 micro-batches \\(samples/s, ${APP_LENGTHS.pipelineBatches.full} batches\\)`));
});
