import test from 'ava';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { acquireBuffer, bufferPoolStats, releaseBuffer } from '@tensorbus/core/internal';
import { natsTransport } from '../src/index.js';
import type { NatsTransport } from '../src/internal.js';
import { sharedNatsServer } from '../src/testing/index.js';
import { seededRandom } from '../src/testing/seeded-random.js';

const RESPONDER = fileURLToPath(new URL('./fixtures/stress-responder.js', import.meta.url));
const MiB = 2 ** 20;

/** Byte i of frame `seed`. */
const byteOf = (i: number, seed: number) => (i * 7 + seed) & 0xff;

function fill(target: Uint8Array, seed: number): Uint8Array {
  for (let i = 0; i < target.byteLength; i++) target[i] = byteOf(i, seed);
  return target;
}

/** The index of the first byte that is not frame `seed`'s plus one, or -1. */
function firstWrong(got: Uint8Array, seed: number): number {
  for (let i = 0; i < got.byteLength; i++) if (got[i] !== ((byteOf(i, seed) + 1) & 0xff)) return i;
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
      const warm = await requester.request('svc', fill(acquireBuffer(2 * MiB), 1), { timeoutMs: 30_000 });
      t.is(firstWrong(warm, 1), -1);
      releaseBuffer(warm);
      const stats = async () => JSON.parse(new TextDecoder().decode(await requester.request('stats', new Uint8Array(0), { timeoutMs: 10_000 }))) as { outstanding: number };
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
            const reply = await requester.request('svc', fill(acquireBuffer(size), mySeed), { timeoutMs: 60_000 });
            t.is(reply.byteLength, size, `${route.name}: frame ${mySeed} of ${size} bytes`);
            t.is(firstWrong(reply, mySeed), -1, `${route.name}: frame ${mySeed} intact`);
            // Let go now or a little later.
            const after = Math.floor(random() * 30);
            if (after === 0) releaseBuffer(reply);
            else setTimeout(() => releaseBuffer(reply), after);
          }),
        );
      }
      t.is(child.exitCode, null, `${route.name}: the responder is alive`);
      if (route.direct) {
        // Every pooled buffer went back, on both sides (segments given back, writes done).
        const deadline = Date.now() + 10_000;
        let here = bufferPoolStats().outstanding;
        let there = (await stats()).outstanding;
        while ((here !== baseHere || there !== baseThere) && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          here = bufferPoolStats().outstanding;
          there = (await stats()).outstanding;
        }
        t.is(here, baseHere, `${route.name}: requester's buffers back to baseline`);
        t.is(there, baseThere, `${route.name}: responder's buffers back to baseline`);
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
