import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Frame } from '@tensorbus/core';
import { acquireFrame, bufferPoolStats } from '@tensorbus/core/internal';
import { natsTransport } from '../src/index.js';
import type { NatsTransport } from '../src/internal.js';
import { sharedNatsServer } from '../src/testing/index.js';
import { seededRandom } from '../src/testing/seeded-random.js';

const RESPONDER = fileURLToPath(new URL('./fixtures/stress-responder.js', import.meta.url));
const MiB = 2 ** 20;

/** Byte i of frame `seed`. */
const byteOf = (i: number, seed: number) => (i * 7 + seed) & 0xff;

/** 64 KiB of frame `seed` from its start, plus `add` (mod 256): the pattern repeats every 256 bytes, so every such block is alike. */
function block(seed: number, add = 0): Uint8Array {
  const out = new Uint8Array(64 * 1024);
  for (let i = 0; i < out.byteLength; i++) out[i] = (byteOf(i, seed) + add) & 0xff;
  return out;
}

// Filled and checked block by block, not byte by byte in JavaScript: frames of up to 64 MiB must not
// stall this process's event loop for seconds (its own connections' timers would fire first).
function fill(target: Uint8Array, seed: number): Uint8Array {
  const pattern = block(seed);
  for (let at = 0; at < target.byteLength; at += pattern.byteLength) target.set(pattern.subarray(0, Math.min(pattern.byteLength, target.byteLength - at)), at);
  return target;
}

/** A pooled frame of `size` bytes holding frame `seed`. */
function frameOf(size: number, seed: number): Frame {
  const frame = acquireFrame(size);
  fill(frame.bytes, seed);
  return frame;
}

/** Releases `frame` now or after a random pause, and once more a little later (a second release is harmless). */
function releaseAtRandom(frame: Frame, random: () => number): void {
  const after = Math.floor(random() * 30);
  if (after === 0) frame.release();
  else setTimeout(() => frame.release(), after);
  setTimeout(() => frame.release(), 35);
}

/** The index of the first byte that is not frame `seed`'s plus one, or -1. */
function firstWrong(got: Uint8Array, seed: number): number {
  const expected = Buffer.from(block(seed, 1).buffer);
  for (let at = 0; at < got.byteLength; at += expected.byteLength) {
    const n = Math.min(expected.byteLength, got.byteLength - at);
    if (Buffer.compare(Buffer.from(got.buffer, got.byteOffset + at, n), expected.subarray(0, n)) === 0) continue;
    for (let i = at; i < at + n; i++) if (got[i] !== ((byteOf(i, seed) + 1) & 0xff)) return i;
  }
  return -1;
}

async function startResponder(url: string, namespace: string, seed: number, env: Record<string, string>, mode = ''): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--expose-gc', RESPONDER, url, namespace, String(seed), mode], {
    env: { ...process.env, TENSORBUS_QUIET: '1', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`the responder exited with ${code}`)));
  });
  return child;
}

const routes = [
  { name: 'direct TCP', env: { TENSORBUS_SHM: '0' }, mode: '', requester: {}, frames: 8, direct: true },
  { name: 'shared memory', env: {}, mode: '', requester: {}, frames: 8, direct: true },
  { name: 'NATS chunks', env: {}, mode: 'nats-only', requester: { direct: false }, frames: 4, direct: false },
] as const;

test.serial('data plane stress - concurrent frames of 1-64 MiB both ways, released at random times, arrive intact on TCP, shared memory and NATS chunks', async (t) => {
  t.timeout(120_000);
  const server = await sharedNatsServer();
  const random = seededRandom(12);
  const started = Date.now();
  for (const [r, route] of routes.entries()) {
    const namespace = `st${process.pid}x${r}${Math.random().toString(36).slice(2, 6)}`;
    const child = await startResponder(server.url, namespace, 100 + r, route.env, route.mode);
    const requester = (await natsTransport({ servers: server.url, namespace, ...route.requester })) as NatsTransport;
    try {
      // Learn the route, and warm both pools, before the baseline.
      const warmRequest = frameOf(2 * MiB, 1);
      const warm = await requester.request('svc', warmRequest, { timeoutMs: 30_000 });
      warmRequest.release();
      t.is(firstWrong(warm.bytes, 1), -1);
      warm.release();
      const stats = async () => JSON.parse(new TextDecoder().decode((await requester.request('stats', new Uint8Array(0), { timeoutMs: 10_000 })).bytes)) as { outstanding: number };
      await new Promise((resolve) => setTimeout(resolve, 100));
      const baseHere = bufferPoolStats().outstanding;
      const baseThere = (await stats()).outstanding;
      // Two waves of concurrent frames (bounded memory on a small machine).
      let seed = 1_000 * (r + 1);
      for (let wave = 0; wave < 2; wave++) {
        await Promise.all(
          Array.from({ length: route.frames / 2 }, async () => {
            const mySeed = ++seed;
            const size = Math.floor(MiB + random() * 63 * MiB);
            await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 40)));
            const sent = frameOf(size, mySeed);
            const replied = requester.request('svc', sent, { timeoutMs: 60_000 });
            // The sender's share goes at a random time, maybe long before the bytes are sent: the transport holds its own.
            releaseAtRandom(sent, random);
            const reply = await replied;
            t.is(reply.byteLength, size, `${route.name}: frame ${mySeed} of ${size} bytes`);
            t.is(firstWrong(reply.bytes, mySeed), -1, `${route.name}: frame ${mySeed} intact`);
            releaseAtRandom(reply, random);
          }),
        );
      }
      t.is(child.exitCode, null, `${route.name}: the responder is alive`);
      // Every pooled frame went back, on both sides and on every path (segments given back, writes and
      // transfers done), each once: a frame released twice would take the count below its baseline.
      const deadline = Date.now() + 10_000;
      let here = bufferPoolStats().outstanding;
      let there = (await stats()).outstanding;
      while ((here !== baseHere || there !== baseThere) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        here = bufferPoolStats().outstanding;
        there = (await stats()).outstanding;
      }
      t.is(here, baseHere, `${route.name}: requester's frames back to baseline`);
      t.is(there, baseThere, `${route.name}: responder's frames back to baseline`);
      if (route.direct) {
        const { calls } = requester.directStats;
        t.true(calls >= route.frames, `${route.name}: ${calls} calls went direct`);
        if (route.name === 'shared memory') t.true(requester.directStats.sharedRequests > 0, 'some went through shared memory');
        else t.is(requester.directStats.sharedRequests, 0, 'none went through shared memory');
      } else {
        t.is(requester.directStats.calls, 0, 'none went direct');
      }
    } finally {
      await requester.close();
      child.kill();
    }
  }
  t.true(Date.now() - started < 90_000, `took ${Date.now() - started} ms`);
});
