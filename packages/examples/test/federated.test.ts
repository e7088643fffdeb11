import test from 'ava';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FederatedRun } from '../src/federated/report.js';

const main = fileURLToPath(new URL('../src/federated/main.js', import.meta.url));

const ROUNDS = 7;
const DEADLINE_MS = 2_500;
const SKIPPED = 2; // client2 sits this round out
const CRASHED = 5; // client3 kills itself at this round

test('examples - federated averaging: 3 clients in separate NATS accounts; a skipped round and a crash do not stall the rounds', async (t) => {
  const out = mkdtempSync(join(tmpdir(), 'tb-fed-'));
  const args = [main, '--rounds', String(ROUNDS), '--deadline-ms', String(DEADLINE_MS), '--skip', `client2:${SKIPPED}`, '--crash', `client3:${CRASHED}`, '--out', out];
  const child = spawn(process.execPath, args, { env: { ...process.env, NATS_URL: '', TENSORBUS_QUIET: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d));
  child.stderr.on('data', (d: Buffer) => process.stderr.write(d));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  t.is(code, 0, stdout);
  t.regex(stdout, new RegExp(`\\[server \\] round +${ROUNDS}/${ROUNDS} \\[#+\\] 100%`), 'progress is shown per round');
  t.true(existsSync(join(out, 'federated.svg')));
  const run = JSON.parse(readFileSync(join(out, 'federated.json'), 'utf8')) as FederatedRun;
  const byRound = new Map(run.curve.map((r) => [r.round, r]));
  t.deepEqual([...byRound.keys()], Array.from({ length: ROUNDS + 1 }, (_, i) => i), 'every round closed');

  // Learning: the global model got much better than its initialisation.
  const first = byRound.get(0)!;
  const last = byRound.get(ROUNDS)!;
  t.true(last.testAccuracy >= 0.7 && last.testAccuracy > first.testAccuracy + 0.3, `held-out accuracy ${first.testAccuracy} -> ${last.testAccuracy}`);

  // The skipped round closed at its deadline with the two others, and not much later.
  const skipped = byRound.get(SKIPPED)!;
  t.deepEqual(skipped.participants, ['client1', 'client3']);
  t.deepEqual(skipped.missing, ['client2']);
  t.is(skipped.closedBy, 'deadline');
  t.true(skipped.seconds! >= DEADLINE_MS / 1000 - 0.05 && skipped.seconds! < DEADLINE_MS / 1000 + 1.5, `round ${SKIPPED} took ${skipped.seconds} s`);
  // client2 was back the round after.
  t.deepEqual(byRound.get(SKIPPED + 1)!.participants, ['client1', 'client2', 'client3']);
  // The crash cost one deadline; later rounds close as soon as the two survivors submitted.
  const crashed = byRound.get(CRASHED)!;
  t.deepEqual(crashed.participants, ['client1', 'client2']);
  t.is(crashed.closedBy, 'deadline');
  for (let round = CRASHED + 1; round <= ROUNDS; round++) {
    const r = byRound.get(round)!;
    t.deepEqual(r.participants, ['client1', 'client2'], `round ${round}`);
    t.is(r.closedBy, 'all', `round ${round} did not wait for the dead client`);
  }
  t.is(run.exits.client3, 'SIGKILL');
  for (const name of ['server', 'client1', 'client2']) t.is(run.exits[name], 'code 0', name);
  // No tensor leaks on the server: as many tensors alive after the last round as after the second.
  t.is(last.tensors, byRound.get(2)!.tensors);

  // Label skew: each client holds mostly one class.
  t.is(run.clients.length, 3);
  run.clients.forEach((c, home) => t.true(c.classCounts[home]! > 0.6 * c.samples, `${c.worker}: ${c.classCounts.join(',')}`));

  // Isolation, as each worker saw it from its own account.
  const probes = new Map(run.isolation.map((r) => [r.worker, new Map(r.probes.map((p) => [p.what, p.outcome]))]));
  for (const report of run.isolation) {
    t.deepEqual(report.group, [report.worker], `${report.worker} sees a group of one`);
    t.deepEqual(report.heardOnMembers, [report.worker], `${report.worker} hears only itself on tb.members`);
    t.is(probes.get(report.worker)!.get(`call fed.hello on ${report.worker} (itself)`), `answered "${report.worker}"`, 'the call probe works');
  }
  const clients = ['client1', 'client2', 'client3'];
  for (const [i, me] of clients.entries()) {
    const mine = probes.get(me)!;
    for (const other of clients.filter((c) => c !== me)) t.is(mine.get(`call fed.hello on ${other}`), 'WORKER_UNAVAILABLE', `${me} -> ${other}`);
    t.is(mine.get('request tb.ctl.server (ping)'), 'WORKER_UNAVAILABLE', `${me} cannot reach the server's control subject`);
    const next = clients[(i + 1) % clients.length];
    t.is(mine.get(`log in as ${next} with ${me}'s password`), 'PERMISSION_DENIED', `${me} cannot log in as ${next}`);
  }
  const server = probes.get('server')!;
  t.is(server.get('request tb.ctl.server (ping)'), 'answered "pong"', 'the control probe works from inside the account');
  t.is(server.get('call fed.hello on client1'), 'WORKER_UNAVAILABLE', 'the server cannot call into a client account');
});
