import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Frame, InvalidArgumentError } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import type { NatsTransport } from '@tensorbus/nats-transport/internal';
import { busyPoll, DEFAULT_BUSY_POLL_US, LONG_WAIT_SHARE, MAX_BUSY_POLL_US, PROBE_EVERY } from '../src/direct/busy-poll.js';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';

const RESPONDER = fileURLToPath(new URL('./fixtures/paced-responder.js', import.meta.url));
const SLOW_MS = 25;
const WINDOW_US = 10_000;

// This process polls whatever else runs on the host (the host's roster is tested in host-pollers.test).
busyPoll.coresCheck = { spare: () => true };

const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A requester in this process (polling windows of {@link WINDOW_US}) and the paced responder in its own, routes learnt. */
async function requesterAndResponder(t: ExecutionContext, responderEnv: NodeJS.ProcessEnv = process.env): Promise<NatsTransport> {
  const url = (await sharedNatsServer()).url;
  const namespace = `bp${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const child = spawn(process.execPath, [RESPONDER, url, namespace, String(SLOW_MS)], { stdio: ['ignore', 'pipe', 'inherit'], env: responderEnv });
  t.teardown(() => child.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`responder exited with ${code}`)));
  });
  const requester = (await natsTransport({ servers: url, namespace, direct: { busyPollUs: WINDOW_US } })) as NatsTransport;
  t.teardown(() => requester.close());
  for (const subject of ['fast', 'slow', 'paced', 'poll-stats']) (await requester.request(subject, Frame.of(new Uint8Array([0])), { timeoutMs: 10_000 })).release();
  return requester;
}

async function requests(requester: NatsTransport, subject: string, count: number, firstByte?: number): Promise<void> {
  for (let i = 0; i < count; i++) (await requester.request(subject, Frame.of(new Uint8Array([firstByte ?? i & 0xff])), { timeoutMs: 10_000 })).release();
}

async function stopsPolling(t: ExecutionContext): Promise<void> {
  const until = Date.now() + 1_000;
  while (busyPoll.active && Date.now() < until) await delay(5);
  t.false(busyPoll.active, 'the loop is not kept polling once nothing is sent');
}

// Polling is the process's: these tests run one at a time.
test.serial('busy poll - answers that land inside a window are seen there, and polling ends once the calls stop', async (t) => {
  const requester = await requesterAndResponder(t);
  const before = busyPoll.stats();
  const direct = requester.directStats.calls;
  await requests(requester, 'fast', 300);
  t.is(requester.directStats.calls - direct, 300, 'every request took the direct route');
  await stopsPolling(t);
  const after = busyPoll.stats();
  t.true(after.hits > before.hits, 'a window saw its answers');
});

test.serial('busy poll - a caller whose answers come later than the window stops polling and spends little CPU waiting', async (t) => {
  const requester = await requesterAndResponder(t);
  const before = busyPoll.stats();
  const cpu = process.cpuUsage();
  const calls = 40;
  await requests(requester, 'slow', calls);
  const used = process.cpuUsage(cpu);
  const after = busyPoll.stats();
  const windows = after.hits + after.misses - before.hits - before.misses;
  // Sends that opened none: backed off after misses, or answers known to take long.
  const none = after.skipped + after.slow - before.skipped - before.slow;
  t.true(windows <= 10, `windows opened: ${windows} of ${calls} sends`);
  t.true(none >= calls - 10, `sends that opened no window: ${none}`);
  // Without backing off every call would poll its whole window: 40 x 10 ms of CPU.
  const cpuMs = (used.user + used.system) / 1000;
  t.true(cpuMs < (calls * WINDOW_US) / 1000 / 2, `CPU while waiting: ${cpuMs.toFixed(0)} ms`);
  await stopsPolling(t);
});

test.serial('busy poll - answers that land late in the window stop most windows opening; one send in PROBE_EVERY still times them', async (t) => {
  const requester = await requesterAndResponder(t);
  // Answers after 70 % of the window: polled through (hits), but longer than LONG_WAIT_SHARE of it.
  const answerMs = Math.ceil((WINDOW_US / 1000) * 0.7);
  t.true(answerMs > (WINDOW_US / 1000) * LONG_WAIT_SHARE);
  // From a polling state (what earlier tests left backed off is used up by quick answers).
  await requests(requester, 'fast', 300);
  const before = busyPoll.stats();
  const calls = 8 * PROBE_EVERY;
  await requests(requester, 'paced', calls, answerMs);
  const after = busyPoll.stats();
  const windows = after.hits + after.misses - before.hits - before.misses;
  const slow = after.slow - before.slow;
  // A probe that finds polling backed off (a loaded host let answers miss the window three times) opens none but is still a probe.
  const probes = windows + after.skipped - before.skipped;
  // A few windows until the average passes the share, then one per PROBE_EVERY sends.
  t.true(windows <= 8 + calls / PROBE_EVERY, `windows opened: ${windows} of ${calls} sends`);
  t.true(probes >= calls / PROBE_EVERY - 1, `windows opened: ${windows}, backed off: ${probes - windows}: the probes still time the answers`);
  t.true(slow >= calls * 0.8, `sends that opened no window for slow answers: ${slow} of ${calls}`);
  // Fast answers again: the probes see them and windows open for every send.
  const fast = busyPoll.stats();
  await requests(requester, 'fast', 300);
  t.true(busyPoll.stats().hits > fast.hits, 'a window saw answers again');
  await stopsPolling(t);
});

test.serial('busy poll - polling starts again once answers come quickly after a slow spell', async (t) => {
  const requester = await requesterAndResponder(t);
  const before = busyPoll.stats();
  await requests(requester, 'slow', 12);
  const backedOff = busyPoll.stats();
  t.true(backedOff.skipped + backedOff.slow > before.skipped + before.slow, 'the slow spell stopped polling');
  // What is left of the backoff (at most MAX_SKIP sends, far fewer here) is used up, then a window hits.
  await requests(requester, 'fast', 300);
  t.true(busyPoll.stats().hits > backedOff.hits, 'a window saw answers again');
  await stopsPolling(t);
});

/** The responder's busy polling: its window and counts. */
async function responderPolling(requester: NatsTransport): Promise<{ windowUs: number; hits: number; misses: number; slow: number; skipped: number; crowded: number }> {
  const reply = await requester.request('poll-stats', Frame.of(new Uint8Array([0])), { timeoutMs: 10_000 });
  const stats = JSON.parse(new TextDecoder().decode(reply.bytes)) as Awaited<ReturnType<typeof responderPolling>>;
  reply.release();
  return stats;
}

test.serial('busy poll - on by default: a process given no window weighs a window after each reply it sends', async (t) => {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.TENSORBUS_BUSY_POLL_US;
  const requester = await requesterAndResponder(t, env);
  await requests(requester, 'fast', 300);
  const stats = await responderPolling(requester);
  t.is(stats.windowUs, DEFAULT_BUSY_POLL_US);
  t.true(DEFAULT_BUSY_POLL_US > 0);
  // Each reply opened a window, or was kept from one by a rule (the host crowded, answers slow, a backoff).
  t.true(stats.hits + stats.misses + stats.crowded + stats.slow + stats.skipped >= 1, JSON.stringify(stats));
});

test.serial('busy poll - TENSORBUS_BUSY_POLL_US=0 turns it off: replies on the direct routes, never a window', async (t) => {
  const requester = await requesterAndResponder(t, { ...process.env, TENSORBUS_BUSY_POLL_US: '0' });
  const direct = requester.directStats.calls;
  await requests(requester, 'fast', 300);
  t.is(requester.directStats.calls - direct, 300, 'the responder replied on the direct route');
  t.deepEqual(await responderPolling(requester), { windowUs: 0, hits: 0, misses: 0, slow: 0, skipped: 0, crowded: 0 }, 'no send opened, skipped or considered a window');
});

test('busy poll - a window out of range is refused before anything connects', async (t) => {
  for (const busyPollUs of [-1, MAX_BUSY_POLL_US + 1, Number.NaN, Number.POSITIVE_INFINITY]) {
    await t.throwsAsync(natsTransport({ servers: 'nats://127.0.0.1:1', direct: { busyPollUs } }), { instanceOf: InvalidArgumentError, message: /busyPollUs/ });
  }
});
