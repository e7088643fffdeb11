/**
 * `tensorbus launch --max-restarts`: real worker processes, really killed
 * (kill -9) or stopped (SIGSTOP), restarted under their names with
 * TENSORBUS_RESTART_COUNT; the others see a new incarnation; past the budget
 * the group stops with the worker's exit code.
 */
import test from 'ava';
import { fileURLToPath } from 'node:url';
import { allGone, launch, pidsOf, running, type Launched } from './launcher-helpers.js';

const worker = fileURLToPath(new URL('./fixtures/supervised-worker.js', import.meta.url));

/** The pid of `name`'s incarnation `restart` (from its `ready` line). */
function pidOf(launched: Launched, name: string, restart: number | 'undefined'): number {
  const match = new RegExp(`ready ${name} (\\d+) restart=${restart}`).exec(launched.out());
  if (!match) throw new Error(`no ready line of ${name} restart=${restart}\n${launched.out()}`);
  return Number(match[1]);
}

/** The lines `name` printed, without its prefix. */
function linesOf(launched: Launched, name: string): string[] {
  const prefix = new RegExp(`^\\[${name} *\\] `);
  return launched.out().split('\n').filter((line) => prefix.test(line)).map((line) => line.replace(prefix, ''));
}

async function stop(launched: Launched): Promise<void> {
  if (launched.launcher.exitCode === null) process.kill(-launched.launcher.pid!, 'SIGKILL');
}

test.serial('supervision - a worker killed with kill -9 is restarted under its name with TENSORBUS_RESTART_COUNT=1, and the others see it leave and come back', async (t) => {
  const launched = launch(['-n', '2', '--names', 'w0,w1', '--max-restarts', '2', worker, 'serve']);
  try {
    await launched.printed(/ready w\d \d+ restart=0/, 2);
    await launched.printed(/\[w0\] view w0,w1/);
    const first = pidOf(launched, 'w1', 0);
    process.kill(first, 'SIGKILL');
    await launched.printed(/ready w1 \d+ restart=1/);
    t.regex(launched.err(), /w1 exited with SIGKILL: restarting it \(restart 1, 2 restarts allowed\)/);
    t.not(pidOf(launched, 'w1', 1), first);
    t.false(running(first));
    // w0's view: w1 is declared failed (view w0), then its new incarnation joins (view w0,w1).
    await launched.printed(/\[w0\] view w0\n[\s\S]*\[w0\] view w0,w1\n/);
    const views = linesOf(launched, 'w0').filter((line) => line.startsWith('view '));
    t.deepEqual(views.slice(views.indexOf('view w0', 1)), ['view w0', 'view w0,w1'], `w0's views: ${views.join(' | ')}`);
    t.is(launched.launcher.exitCode, null, 'the group goes on');
    const pids = pidsOf(launched);
    process.kill(-launched.launcher.pid!, 'SIGINT');
    t.is(await launched.exit, 130);
    t.deepEqual(await allGone(pids.filter((pid) => pid !== first)), []);
  } finally {
    await stop(launched);
  }
});

test.serial('supervision - a SIGSTOPped worker that membership declares failed is killed and restarted within a second', async (t) => {
  const launched = launch(['-n', '2', '--names', 'w0,w1', '--max-restarts', '1', worker, 'serve']);
  try {
    await launched.printed(/ready w\d \d+ restart=0/, 2);
    await launched.printed(/\[w0\] view w0,w1/);
    const stopped = pidOf(launched, 'w1', 0);
    process.kill(stopped, 'SIGSTOP');
    const declared = await launched.printed(/w1 was declared failed by w0 \(no heartbeat\) but its process runs: killing it/);
    const restarted = await launched.printed(/w1 exited with SIGKILL: restarting it \(restart 1/);
    t.true(restarted - declared < 1_000, `restarted ${restarted - declared} ms after it was declared failed`);
    await launched.printed(/ready w1 \d+ restart=1/);
    t.deepEqual(await allGone([stopped], 2_000), [], 'the stopped process was killed');
    process.kill(-launched.launcher.pid!, 'SIGINT');
    t.is(await launched.exit, 130);
  } finally {
    await stop(launched);
  }
});

test.serial('supervision - --restart-strategy all: a killed worker is restarted with every other worker, each with its restart count', async (t) => {
  const launched = launch(['-n', '2', '--names', 'w0,w1', '--max-restarts', '1', '--restart-strategy', 'all', worker, 'serve']);
  try {
    await launched.printed(/ready w\d \d+ restart=0/, 2);
    const w0 = pidOf(launched, 'w0', 0);
    process.kill(pidOf(launched, 'w1', 0), 'SIGKILL');
    await launched.printed(/ready w\d \d+ restart=1/, 2);
    t.regex(launched.err(), /restarting w0 with the others \(restart 1\)/);
    t.not(pidOf(launched, 'w0', 1), w0);
    t.deepEqual(await allGone([w0], 5_000), [], 'the first w0 was stopped');
    process.kill(-launched.launcher.pid!, 'SIGINT');
    t.is(await launched.exit, 130);
  } finally {
    await stop(launched);
  }
});

test.serial('supervision - N+1 failures within the window stop the group, saying which worker and why, with its exit code', async (t) => {
  const launched = launch(['-n', '2', '--names', 'w0,w1', '--max-restarts', '2', '--restart-window', '120', '--grace', '5', worker, 'fail']);
  try {
    t.is(await launched.exit, 7);
    t.deepEqual(
      [...launched.out().matchAll(/ready w1 \d+ restart=(\d)/g)].map((m) => m[1]),
      ['0', '1', '2'],
      'w1 ran three times, with its restart count',
    );
    t.regex(launched.err(), /w1 exited with code 7 after 2 restarts within 120 s: not restarting it/);
    t.regex(launched.err(), /w1 exited with code 7: stopping the other workers/);
    t.deepEqual(await allGone(pidsOf(launched)), []);
  } finally {
    await stop(launched);
  }
});

test.serial('supervision - an RRef of the killed incarnation fails with RREF_OWNER_LOST and never reaches the new one', async (t) => {
  const launched = launch(['-n', '2', '--names', 'w0,w1', '--max-restarts', '1', worker, 'rref']);
  try {
    await launched.printed(/old rref made/);
    // w1's ready line comes through its own pipe: it may follow w0's lines.
    await launched.printed(/ready w1 \d+ restart=0/);
    process.kill(pidOf(launched, 'w1', 0), 'SIGKILL');
    await launched.printed(/new w1 counter: \d+/);
    t.regex(launched.out(), /\[w0\] old rref: RREF_OWNER_LOST/);
    // A fresh counter on the new incarnation: the old one's call did not add to it.
    t.regex(launched.out(), /\[w0\] new w1 counter: 5\n/);
    process.kill(-launched.launcher.pid!, 'SIGINT');
    t.is(await launched.exit, 130);
  } finally {
    await stop(launched);
  }
});

test.serial('supervision - without --max-restarts a killed worker stops the group as before, with 128 + the signal', async (t) => {
  const launched = launch(['-n', '2', '--names', 'w0,w1', '--grace', '5', worker, 'serve']);
  try {
    await launched.printed(/ready w\d \d+ restart=undefined/, 2);
    process.kill(pidOf(launched, 'w1', 'undefined'), 'SIGKILL');
    t.is(await launched.exit, 137);
    t.regex(launched.err(), /w1 exited with SIGKILL: stopping the other workers/);
    t.notRegex(launched.err(), /restarting/);
  } finally {
    await stop(launched);
  }
});
