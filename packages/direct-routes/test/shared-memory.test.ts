import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { connect as tcpConnect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { bufferPoolStats } from '@tensorbus/core/internal';
import { natsTransport, sharedMemoryStatus, type NatsTransportOptions } from '@tensorbus/nats-transport';
import type { NatsTransport } from '@tensorbus/nats-transport/internal';
import { MAX_OWN_SEGMENTS, SharedSegments } from '../src/shm/shared-segments.js';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { answerPlusOne, callPlusOne, patternFrame, sharedCallFrame } from '../src/testing/shm-bytes.js';

const RESPONDER = fileURLToPath(new URL('./fixtures/shm-responder.js', import.meta.url));
const FOUR_MB = 4 << 20;

/** This process's cache of other processes' segments, by "pid:fd". */
function mappedSegments(transport: NatsTransport): Map<string, unknown> {
  return (transport as unknown as { direct: { sharedMemory: { segments: { mapped: Map<string, unknown> } } } }).direct.sharedMemory.segments.mapped;
}

function freshNamespace(): string {
  return `s${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
}

async function transport(t: ExecutionContext, namespace: string, options: Partial<NatsTransportOptions> = {}): Promise<NatsTransport> {
  const created = (await natsTransport({ servers: (await sharedNatsServer()).url, namespace, ...options })) as NatsTransport;
  t.teardown(() => created.close());
  return created;
}

/** A requester and a responder serving `svc` in this process, as the fixture does in its own; the route is learnt. */
async function inProcessPair(t: ExecutionContext, responderOptions: Partial<NatsTransportOptions> = {}) {
  const namespace = freshNamespace();
  const requester = await transport(t, namespace);
  const responder = await transport(t, namespace, responderOptions);
  responder.subscribe('svc', answerPlusOne, { exclusive: true });
  await responder.flush();
  await call(requester, 100, 1);
  return { requester, responder };
}

/** The responder fixture in its own OS process, ready to serve. */
async function responderProcess(t: ExecutionContext, namespace: string) {
  const child = spawn(process.execPath, [RESPONDER, (await sharedNatsServer()).url, namespace], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
    child.once('exit', (code) => reject(new Error(`responder exited with ${code}`)));
  });
  return child;
}

const call = callPlusOne;

test('shared memory - the addon is built here, and says so', (t) => {
  // CI builds it (npm run build); a machine without a compiler falls back to TCP, tested below.
  t.deepEqual(sharedMemoryStatus(), { available: true });
});

// The tests that count the buffer pool's segments run alone: the pool is the process's.
test.serial('shared memory - requests and replies between two processes travel as segment references, intact, and segments are reused', async (t) => {
  const namespace = freshNamespace();
  await responderProcess(t, namespace);
  const requester = await transport(t, namespace);
  t.true((await call(requester, 100, 1)).ok, 'the first request goes through NATS and learns the route');
  const before = bufferPoolStats().allocated;
  for (let i = 0; i < 30; i++) t.true((await call(requester, FOUR_MB + i, i)).ok, `request ${i}`);
  t.like(requester.directStats, { calls: 30, sharedRequests: 30, sharedReplies: 30 });
  // Each segment comes back once the other side has read it: a handful serve thirty calls.
  t.true(bufferPoolStats().allocated - before <= 4, `${bufferPoolStats().allocated - before} segments for 30 calls`);
});

test('shared memory - a reply still held is never overwritten; a dead responder fails the call at once', async (t) => {
  const namespace = freshNamespace();
  const child = await responderProcess(t, namespace);
  const requester = await transport(t, namespace);
  await call(requester, 100, 1);
  const held = await call(requester, FOUR_MB, 7, false);
  const copy = Uint8Array.from(held.reply.bytes);
  for (let i = 0; i < 10; i++) t.true((await call(requester, FOUR_MB, 100 + i)).ok);
  t.deepEqual(held.reply.bytes, copy, 'the responder did not reuse the segment of a reply not given back');
  held.reply.release();

  const mapsOf = (pid: number) => [...mappedSegments(requester).keys()].some((key) => key.startsWith(`${pid}:`));
  t.true(mapsOf(child.pid!), 'the responder\'s reply segments are mapped here');
  const inFlightRequest = patternFrame(FOUR_MB, 3);
  const inFlight = requester.request('svc', inFlightRequest, { timeoutMs: 30_000 });
  inFlightRequest.release();
  child.kill('SIGKILL');
  const started = Date.now();
  const error = await t.throwsAsync(inFlight);
  t.true(['WORKER_UNAVAILABLE'].includes((error as { code?: string }).code ?? ''), `failed with ${String(error)}`);
  t.true(Date.now() - started < 2_000, 'failed when the connection broke, not at the timeout');
  t.false(mapsOf(child.pid!), 'a dead responder\'s segments are no longer kept mapped');
});

test.serial('shared memory - a reply dropped without a release is given back once collected', async (t) => {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc (the ava config sets it)');
  const { requester } = await inProcessPair(t);
  const before = bufferPoolStats().allocated;
  for (let i = 0; i < 12; i++) {
    // The reply is checked and dropped, never released: a raw user, or tensors that view it.
    t.true((await call(requester, FOUR_MB, i, false)).ok);
    gc();
    await new Promise((resolve) => setTimeout(resolve, 30));
  }
  t.like(requester.directStats, { sharedReplies: 12 });
  // Without the collection hand-back every reply would keep its segment: twelve more.
  t.true(bufferPoolStats().allocated - before <= 6, `${bufferPoolStats().allocated - before} segments for 12 calls`);
});

test.serial('shared memory - every segment is given back both ways: a couple of segments each way serve ten calls', async (t) => {
  const { requester } = await inProcessPair(t);
  t.true((await call(requester, FOUR_MB, 99)).ok);
  const before = bufferPoolStats().allocated;
  for (let i = 0; i < 10; i++) t.true((await call(requester, FOUR_MB, i)).ok, `call ${i}`);
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.like(requester.directStats, { sharedRequests: 11, sharedReplies: 11 });
  // Without the give-backs every call would take a new segment each way: twenty more.
  t.true(bufferPoolStats().allocated - before <= 4, `${bufferPoolStats().allocated - before} segments for 10 calls`);
});

test('shared memory - a responder without it gets the bytes; frames beyond the limit go over TCP', async (t) => {
  const { requester } = await inProcessPair(t, { direct: { sharedMemory: false } });
  for (let i = 0; i < 3; i++) t.true((await call(requester, FOUR_MB, i)).ok);
  t.like(requester.directStats, { calls: 3, sharedRequests: 0, sharedReplies: 0 });

  const { requester: requester2 } = await inProcessPair(t);
  t.true((await call(requester2, 80 << 20, 5)).ok, '80 MB, beyond the 64 MB segment limit');
  t.like(requester2.directStats, { calls: 1, sharedRequests: 0 });
  t.true((await call(requester2, FOUR_MB, 6)).ok);
  t.like(requester2.directStats, { calls: 2, sharedRequests: 1, sharedReplies: 1 });
});

test('shared memory - own segments are bounded by frame size, bytes and descriptors; beyond, heap memory', (t) => {
  let descriptors = 0;
  const binding = {
    create: (size: number): [number, ArrayBuffer] => [++descriptors, new ArrayBuffer(size)],
    open: () => {
      throw new Error('not used');
    },
    close: () => undefined,
  };
  const segments = new SharedSegments(binding, 1 << 20, 8 << 20);
  t.is(segments.allocate(2 << 20), undefined, 'a frame beyond maxFrameBytes');
  const eight = Array.from({ length: 8 }, () => segments.allocate(1 << 20));
  t.true(eight.every((b) => b?.byteLength === 1 << 20));
  t.is(segments.allocate(1 << 20), undefined, 'over the byte budget');
  t.like(segments.refOf(new Uint8Array(eight[0]!, 0, 100)), { pid: process.pid, fd: 1, size: 1 << 20, length: 100 });
  t.is(segments.refOf(new Uint8Array(eight[0]!, 8, 100)), undefined, 'only frames at the start of a segment');
  t.is(segments.refOf(new Uint8Array(100)), undefined, 'heap memory is no segment');

  const many = new SharedSegments(binding, 1 << 20, 2 ** 40);
  const held = Array.from({ length: MAX_OWN_SEGMENTS }, () => many.allocate(4096));
  t.true(held.every((b) => b !== undefined));
  t.is(many.allocate(4096), undefined, `no more than ${MAX_OWN_SEGMENTS} descriptors`);
});

test('shared memory - a reference to memory that is not a segment is refused, and the responder goes on', async (t) => {
  const { requester } = await inProcessPair(t);
  const [[subject, route]] = [...(requester as unknown as { direct: { learnt: { bySubject: Map<string, { host: string; port: number; token: Buffer }> } } }).direct.learnt.bySubject];
  // OP_CALL_SHM naming pid 1's descriptor 999, then another naming this process's stdin.
  const forged = (pid: number, fd: number, id: number) => sharedCallFrame(0x05, id, route!.token, subject!, { pid, fd, id: '00'.repeat(8), size: 1 << 20, length: 1 << 20 });
  const statuses = await new Promise<number[]>((resolve, reject) => {
    const socket = tcpConnect({ host: route!.host, port: route!.port });
    const got: number[] = [];
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      while (buffered.length >= 14) {
        got.push(buffered[5]!);
        buffered = buffered.subarray(14 + buffered.readUInt32BE(10));
      }
      if (got.length === 2) {
        socket.destroy();
        resolve(got);
      }
    });
    socket.on('error', reject);
    socket.write(Buffer.concat([forged(1, 999, 1), forged(process.pid, 0, 2)]));
  });
  t.deepEqual(statuses, [0x04, 0x04], 'both refused with "cannot map"');
  t.true((await call(requester, FOUR_MB, 9)).ok, 'the responder still serves');
});
