import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BusyPoll } from '../src/direct/busy-poll.js';
import { HostPollers, ROSTER_REFRESH_MS } from '../src/direct/host-pollers.js';

const roster = () => join(mkdtempSync(join(tmpdir(), 'tb-pollers-')), 'roster');

/** A live process of its own (a node that idles until killed). */
function liveProcess(t: { teardown(f: () => void): void }): ChildProcess {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 60000)'], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  return child;
}

/** The id of a process that has exited. */
async function goneProcess(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
}

test('host pollers - a process counts itself and every live process of the roster; cores are spare while they are no more than the cores', (t) => {
  const dir = roster();
  const pollers = new HostPollers(dir, 2);
  t.is(pollers.count(), 1, 'this process entered at the first count');
  t.true(readdirSync(dir).includes(String(process.pid)));
  t.true(pollers.spare(0));
  const others = [liveProcess(t), liveProcess(t)];
  for (const child of others) writeFileSync(join(dir, String(child.pid)), '');
  t.is(pollers.count(), 3);
  t.false(new HostPollers(dir, 2).spare(0), 'three processes on two cores: none spare');
  t.true(new HostPollers(dir, 4).spare(0), 'three on four: spare');
});

test('host pollers - an entry whose process is gone (killed with -9, say) is not counted and is removed; other names are ignored', async (t) => {
  const dir = roster();
  const pollers = new HostPollers(dir, 2);
  pollers.count();
  const gone = await goneProcess();
  writeFileSync(join(dir, String(gone)), '');
  writeFileSync(join(dir, 'not-a-pid'), '');
  writeFileSync(join(dir, '0'), '');
  t.is(pollers.count(), 1);
  t.false(existsSync(join(dir, String(gone))), 'the dead entry was removed');
});

test('host pollers - leaving removes the entry', (t) => {
  const dir = roster();
  const pollers = new HostPollers(dir, 2);
  pollers.count();
  pollers.leave();
  t.false(existsSync(join(dir, String(process.pid))));
});

test('host pollers - a count is reused for ROSTER_REFRESH_MS, then the roster is read again', (t) => {
  const dir = roster();
  const pollers = new HostPollers(dir, 1);
  t.true(pollers.spare(1_000));
  writeFileSync(join(dir, String(liveProcess(t).pid)), '');
  t.true(pollers.spare(1_000 + ROSTER_REFRESH_MS - 1), 'the last count still holds');
  t.false(pollers.spare(1_000 + ROSTER_REFRESH_MS), 'read again: two processes, one core');
});

test('host pollers - a roster that cannot be made counts as no core spare', (t) => {
  const file = join(mkdtempSync(join(tmpdir(), 'tb-pollers-')), 'a-file');
  writeFileSync(file, '');
  const pollers = new HostPollers(join(file, 'roster'), 64);
  t.false(pollers.spare(0));
  t.is(pollers.count(), Infinity);
});

test('busy poll - no window opens while the host has no core spare; one opens once it has', (t) => {
  let spare = false;
  const poll = new BusyPoll(500, { spare: () => spare });
  poll.sent();
  t.false(poll.active, 'crowded: no window');
  t.is(poll.stats().crowded, 1);
  spare = true;
  poll.sent();
  t.true(poll.active, 'a core each: the window opens');
  poll.windowUs = 0;
});

test('host pollers - a roster folder others may write in, or a link in place of an entry, is not used: no core spare', (t) => {
  const open = roster();
  mkdirSync(open, { mode: 0o777 });
  chmodSync(open, 0o777);
  t.false(new HostPollers(open, 64).spare(0), 'a folder anyone may write in');
  const linked = roster();
  mkdirSync(linked, { mode: 0o700 });
  const victim = join(mkdtempSync(join(tmpdir(), 'tb-pollers-')), 'victim');
  writeFileSync(victim, 'keep');
  symlinkSync(victim, join(linked, String(process.pid)));
  t.false(new HostPollers(linked, 64).spare(0), 'an entry that is a link');
  t.is(readFileSync(victim, 'utf8'), 'keep', 'nothing was written through the link');
});
