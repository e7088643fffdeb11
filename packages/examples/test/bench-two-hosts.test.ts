/**
 * The two-host part of the bench: two network namespaces joined by a veth
 * pair, made and removed by the bench; tensorbus with its driver in host A
 * and its callee in B; PyTorch's ranks one in each host (here a stand-in
 * script, so no PyTorch is needed). Needs the right to make namespaces (root
 * in CI), as the transport's two-host tests.
 */
import test from 'ava';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { namespacesRefused, TwoHosts } from '@tensorbus/nats-transport/testing';
import { CASES } from '../src/bench/cases.js';
import { Progress } from '../src/bench/runner.js';
import { runPytorchTwoHosts } from '../src/bench/systems/pytorch-two-hosts.js';
import { runTwoHosts } from '../src/bench/two-hosts.js';

const case4MB = CASES.find((c) => c.id === '4MB')!;
const namespaces = () => execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });

/** A stand-in for PyTorch's two-host script in a fresh folder: `lines(dir)` is its source, one line each. */
function standInScript(prefix: string, lines: (dir: string) => string[]): { dir: string; standIn: string } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const standIn = join(dir, 'stand-in.mjs');
  writeFileSync(standIn, lines(dir).join('\n'));
  return { dir, standIn };
}

const refused = namespacesRefused();
if (refused) process.stderr.write(`[bench two-hosts tests] skipped: ${refused}\n`);
const hostsTest = refused ? test.skip : test.serial;

hostsTest('bench two hosts - tensorbus between two network namespaces measures 4 MB over direct TCP on the veth pair, never shared memory, and the namespaces are gone after', async (t) => {
  const run = await runTwoHosts({ cases: [case4MB], tensorbus: true, pytorch: false, quick: true }, new Progress(1));
  t.deepEqual(run.missing, []);
  const [result] = run.results;
  t.like(result, { caseId: '4MB', system: 'tensorbus-2hosts' });
  t.true(Number.isFinite(result?.medianMs) && result!.medianMs! > 0 && (result?.n ?? 0) >= 8, JSON.stringify(result));
  t.regex(run.setup.tensorbusPath ?? '', /^direct TCP between the hosts' data ports \(\d+ calls, warm-up included\), none through shared memory$/);
  const names = /network namespaces (\S+) and (\S+) made by the bench/.exec(run.setup.setup);
  t.truthy(names, run.setup.setup);
  const left = namespaces();
  t.false(left.includes(names![1]!) || left.includes(names![2]!), `namespaces removed: ${left}`);
});

hostsTest('bench two hosts - PyTorch\'s rank 0 runs in host A and rank 1 in host B, rendezvous at A\'s address on its veth, and both ranks\' peaks are read', async (t) => {
  // Each rank records its network namespace and arguments; rank 0 prints figures as the real script does.
  const { dir, standIn } = standInScript('tb-torch2-', (folder) => [
    "import { readlinkSync, writeFileSync } from 'node:fs';",
    'const [rank, address, port, sizes, device] = process.argv.slice(2);',
    `writeFileSync(${JSON.stringify(folder)} + '/rank' + rank + '.json', JSON.stringify({ ns: readlinkSync('/proc/self/ns/net'), address, port, sizes, device }));`,
    "const hold = Buffer.alloc(64 << 20, 1);", // a peak to see
    "if (rank === '0') for (const bytes of sizes.split(',')) console.log(JSON.stringify({ case: 'identity', bytes: Number(bytes), median_us: 1500 }));",
    'setTimeout(() => process.exit(hold[0] - 1), 300);',
  ]);
  const hosts = new TwoHosts({ subnet: '10.214.0' });
  t.teardown(() => hosts.remove());
  const measured = await runPytorchTwoHosts(hosts, [4 << 20, 400 << 20], (bytes) => `${bytes >> 20}MB`, { python: process.execPath, script: standIn });
  t.deepEqual(
    measured.results.map((r) => [r.caseId, r.system, r.medianMs]),
    [
      ['4MB', 'pytorch-2hosts', 1.5],
      ['400MB', 'pytorch-2hosts', 1.5],
    ],
  );
  const inode = (name: string) => `net:[${statSync(`/run/netns/${name}`).ino}]`;
  for (const [rank, host] of [[0, 0], [1, 1]] as const) {
    const seen = JSON.parse(readFileSync(join(dir, `rank${rank}.json`), 'utf8')) as Record<string, string>;
    t.is(seen.ns, inode(hosts.names[host]), `rank ${rank} in host ${'AB'[host]}`);
    t.not(seen.ns, readlinkSync('/proc/self/ns/net'));
    t.like(seen, { address: hosts.addresses[0], sizes: `${4 << 20},${400 << 20}`, device: hosts.devices[host] });
  }
  t.deepEqual(measured.peaks.map((p) => p.role), ['rank 0 (caller, host A)', 'rank 1 (callee, host B)']);
  for (const p of measured.peaks) t.true(p.peakBytes > 64 << 20, `${p.role}: ${p.peakBytes}`);
});

hostsTest('bench two hosts - PyTorch runs its 4 MB once in each of tensorbus\'s blocks between the hosts, its figure the median of the runs', async (t) => {
  // Rank 0 counts its runs and answers 1, 3, 2 ms in turn (for any size asked).
  const { dir, standIn } = standInScript('tb-torch2-blocks-', (folder) => [
    "import { appendFileSync, existsSync, readFileSync } from 'node:fs';",
    'const [rank, , , sizes] = process.argv.slice(2);',
    `const log = ${JSON.stringify(join(folder, 'runs'))};`,
    "if (rank === '0') {",
    "  const run = existsSync(log) ? readFileSync(log, 'utf8').length : 0;",
    "  appendFileSync(log, 'x');",
    "  for (const bytes of sizes.split(',')) console.log(JSON.stringify({ case: 'identity', bytes: Number(bytes), median_us: [1000, 3000, 2000][run % 3] }));",
    '}',
  ]);
  const run = await runTwoHosts(
    { cases: [case4MB], tensorbus: true, pytorch: true, quick: true, pytorchCommand: { python: process.execPath, script: standIn } },
    new Progress(1),
  );
  t.deepEqual(run.missing, []);
  const torch = run.results.find((r) => r.system === 'pytorch-2hosts')!;
  const blocks = run.results.find((r) => r.system === 'tensorbus-2hosts')!;
  t.true(Number.isFinite(blocks.medianMs));
  // A quick run's 4 MB has two blocks: two runs, 1 and 3 ms, whose median is 2.
  t.is(readFileSync(join(dir, 'runs'), 'utf8'), 'xx');
  t.deepEqual(torch.runMediansMs, [1, 3]);
  t.is(torch.medianMs, 2);
});

test('bench two hosts - where namespaces cannot be made, both systems are missing with the reason and the run goes on', async (t) => {
  const run = await runTwoHosts({ cases: [case4MB], tensorbus: true, pytorch: true, quick: true, hosts: { ip: '/nonexistent/ip' } }, new Progress(1));
  t.deepEqual(run.results, []);
  t.deepEqual(run.missing.map((m) => m.system), ['tensorbus-2hosts', 'pytorch-2hosts']);
  for (const m of run.missing) t.regex(m.reason, /^two hosts not made: cannot make network namespaces here \(\/nonexistent\/ip netns add: .*ENOENT/);
  t.regex(run.setup.setup, /^Not measured: cannot make network namespaces here/);
});
