import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { connect as tcpConnect } from 'node:net';
import { fileURLToPath } from 'node:url';
import { defaultCodec, Frame, TransportError, tf, type DeferredBytes, type FrameDecoder, type InboundMessage } from '@tensorbus/core';
import { acquireFrame, releaseOutgoing } from '@tensorbus/core/internal';
import { natsTransport } from '@tensorbus/nats-transport';
import type { NatsTransport } from '@tensorbus/nats-transport/internal';
import { drainNow, drainSoon, FillingStalledError, progressOffset, REPLY_STALL_MS, REQUEST_STALL_MS } from '../src/shm/filling.js';
import type { SharedSegments } from '../src/shm/shared-segments.js';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { sharedCallFrame } from '../src/testing/shm-bytes.js';

const ECHO = fileURLToPath(new URL('./fixtures/tensor-echo.js', import.meta.url));

function freshNamespace(): string {
  return `f${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
}

async function transport(t: ExecutionContext, namespace: string): Promise<NatsTransport> {
  const created = (await natsTransport({ servers: (await sharedNatsServer()).url, namespace })) as NatsTransport;
  t.teardown(() => created.close());
  return created;
}

/** Deferred bytes of `length` whose byte i is (i * 7 + seed) & 0xff; `fail` makes every read throw. */
function deferred(length: number, seed: number, fail = false): DeferredBytes {
  const bytes: DeferredBytes = {
    byteLength: length,
    read(position, target) {
      if (fail) throw new Error('these bytes cannot be read');
      for (let i = 0; i < target.byteLength; i++) target[i] = ((position + i) * 7 + seed) & 0xff;
    },
    toBytes() {
      const all = new Uint8Array(length);
      bytes.read(0, all);
      return all;
    },
    // As the codec's frames do: pooled memory, hence a segment.
    toFrame() {
      const frame = acquireFrame(length);
      bytes.read(0, frame.bytes);
      return frame;
    },
    hold: () => () => undefined,
  };
  return bytes;
}

function isPattern(got: Uint8Array, seed: number): boolean {
  for (let i = 0; i < got.byteLength; i++) if (got[i] !== ((i * 7 + seed) & 0xff)) return false;
  return true;
}

/** The tensor-echo fixture in its own OS process, and a way to ask how many tensors it holds. */
async function echoProcess(t: ExecutionContext, namespace: string) {
  const child = spawn(process.execPath, [ECHO, (await sharedNatsServer()).url, namespace], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGKILL'));
  let output = '';
  const waitFor = (pattern: RegExp) => new Promise<RegExpExecArray>((resolve, reject) => {
    const check = () => {
      const match = pattern.exec(output);
      if (!match) return false;
      output = output.slice(match.index + match[0].length);
      child.stdout.off('data', onData);
      resolve(match);
      return true;
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      check();
    };
    if (!check()) child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`echo exited with ${code}`)));
  });
  await waitFor(/ready\n/);
  return {
    tensors: async () => {
      child.stdin.write('tensors\n');
      return Number((await waitFor(/tensors (\d+)\n/))[1]);
    },
  };
}

test('filling - between two processes a large tensor request and its reply are read while they fill, into tensor memory, intact, leaving no tensors on either side', async (t) => {
  const namespace = freshNamespace();
  const echo = await echoProcess(t, namespace);
  const requester = await transport(t, namespace);
  await requester.request('echo', defaultCodec.encode([]), { timeoutMs: 30_000 }); // learns the route
  const baseline = tf.memory().numTensors;
  const echoBaseline = await echo.tensors();
  // Lengths that are and are not multiples of the chunk, one and two tensors a call.
  const shapes = [[2 ** 20], [2 ** 20 + 7], [3 * 2 ** 19 + 1, 2 ** 18]];
  let calls = 0;
  for (let round = 0; round < 4; round++) {
    for (const lengths of shapes) {
      const sent = lengths.map((n, k) => tf.tensor1d(Float32Array.from({ length: n }, (_, i) => (i * 13 + round + k) % 4099)));
      const expected = sent.map((x) => Buffer.from(x.dataSync().buffer));
      const frame = defaultCodec.encodeOutgoing(sent);
      t.false(frame instanceof Uint8Array, 'a frame of over 1 MiB of tensors is deferred');
      let decoder: FrameDecoder | undefined;
      const reply = await requester.request('echo', frame, { timeoutMs: 30_000, replySink: (size) => (decoder = defaultCodec.decoder(size)) });
      releaseOutgoing(frame);
      for (const x of sent) x.dispose();
      t.is(reply.byteLength, 0, 'the reply went into the sink');
      const got = decoder!.result() as tf.Tensor[];
      t.deepEqual(got.map((y) => Buffer.from(y.dataSync().buffer).equals(expected.shift()!)), lengths.map(() => true), `call ${calls} intact`);
      for (const y of got) y.dispose();
      calls++;
    }
  }
  t.like(requester.directStats, { sharedRequests: calls, fillingRequests: calls, fillingReplies: calls, streamedReceived: calls });
  for (let i = 0; i < 50 && tf.memory().numTensors !== baseline; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  t.is(tf.memory().numTensors, baseline, 'no tensor left in the requester');
  t.is(await echo.tensors(), echoBaseline, 'no tensor left in the responder');
});

/** A requester and a responder in this process; the responder counts the requests it runs. */
async function inProcessPair(t: ExecutionContext, answer: (message: InboundMessage) => DeferredBytes | Uint8Array) {
  const namespace = freshNamespace();
  const requester = await transport(t, namespace);
  const responder = await transport(t, namespace);
  const ran = { count: 0 };
  responder.subscribe('svc', (message) => {
    ran.count++;
    message.data.release();
    message.respond(answer(message));
  }, { exclusive: true });
  await responder.flush();
  await requester.request('svc', new Uint8Array(1), { timeoutMs: 30_000 });
  return { requester, responder, ran };
}

test.serial('filling - TENSORBUS_SHM_FILLING=0 sends large deferred frames whole into their segment instead', async (t) => {
  const { requester } = await inProcessPair(t, () => deferred(2 ** 21, 5));
  process.env.TENSORBUS_SHM_FILLING = '0';
  try {
    const reply = await requester.request('svc', deferred(2 ** 21, 1), { timeoutMs: 30_000 });
    t.true(isPattern(reply.bytes, 5));
    reply.release();
  } finally {
    delete process.env.TENSORBUS_SHM_FILLING;
  }
  t.like(requester.directStats, { sharedRequests: 1, fillingRequests: 0, fillingReplies: 0 });
  const reply = await requester.request('svc', deferred(2 ** 21, 2), { timeoutMs: 30_000 });
  t.true(isPattern(reply.bytes, 5));
  reply.release();
  t.like(requester.directStats, { sharedRequests: 2, fillingRequests: 1, fillingReplies: 1 });
});

test('filling - a reply its responder cannot read out of its own memory fails its call with a TransportError; the route goes on', async (t) => {
  let failing = false;
  const { requester } = await inProcessPair(t, () => deferred(2 ** 21, 9, failing));
  failing = true;
  const error = await t.throwsAsync(requester.request('svc', deferred(2 ** 21, 3), { timeoutMs: 30_000 }));
  t.true(error instanceof TransportError, `failed with ${String(error)}`);
  t.regex(error!.message, /failed to write the frame/);
  failing = false;
  const reply = await requester.request('svc', deferred(2 ** 21, 4), { timeoutMs: 30_000 });
  t.true(isPattern(reply.bytes, 9));
  reply.release();
});

test('filling - a request whose segment stops filling, or whose sender failed, is refused unrun within the stall limit; one with no room for its progress is refused as unmappable; the responder goes on', async (t) => {
  const { requester, ran } = await inProcessPair(t, () => new Uint8Array(8));
  const segments = (requester as unknown as { direct: { sharedMemory: { segments: SharedSegments } } }).direct.sharedMemory.segments;
  const [[subject, route]] = [...(requester as unknown as { direct: { learnt: { bySubject: Map<string, { host: string; port: number; token: Buffer }> } } }).direct.learnt.bySubject];
  // A segment of this process's (the pool's memory), announced as a filling request of `length` bytes.
  const frame = acquireFrame(2 ** 21);
  const own = segments.refOf(frame.bytes)!;
  t.truthy(own, 'the pool gives shared memory');
  const word = new Int32Array(frame.bytes.buffer, progressOffset(2 ** 20 + 1), 1);
  const filling = (id: number, length: number) => sharedCallFrame(0x07, id, route!.token, subject!, { ...own, length });
  const socket = tcpConnect({ host: route!.host, port: route!.port });
  t.teardown(() => socket.destroy());
  let buffered = Buffer.alloc(0);
  const replies: Array<(status: number) => void> = [];
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    while (buffered.length >= 14 && buffered.length >= 14 + buffered.readUInt32BE(10)) {
      const status = buffered[5]!;
      const id = buffered.readUInt32BE(1);
      buffered = buffered.subarray(14 + buffered.readUInt32BE(10));
      // Id 0 gives a segment back; only answers are awaited.
      if (id !== 0) replies.shift()?.(status);
    }
  });
  const ask = (id: number, length: number) => new Promise<number>((resolve) => {
    replies.push(resolve);
    socket.write(filling(id, length));
  });

  Atomics.store(word, 0, 1000); // a little, then nothing more
  let started = performance.now();
  t.is(await ask(1, 2 ** 20 + 1), 0x07, 'a segment that stops filling: "send it another way"');
  const waited = performance.now() - started;
  t.true(waited >= REQUEST_STALL_MS && waited < 2_000, `refused after ${waited.toFixed(0)} ms`);
  Atomics.store(word, 0, -1);
  // That it is refused without waiting out the stall limit: the next test (a round trip's time says little under load).
  t.is(await ask(2, 2 ** 20 + 1), 0x07, 'a sender that says it failed: the same');
  t.is(await ask(3, 2 ** 21), 0x04, 'a frame that fills its segment leaves no room for the word: cannot map');
  t.is(ran.count, 1, 'none of them ran (the one run is the request that learnt the route)');
  frame.release();
  const reply = await requester.request('svc', deferred(2 ** 21, 6), { timeoutMs: 30_000 });
  t.is(reply.byteLength, 8, 'the responder goes on');
  reply.release();
  t.is(ran.count, 2);
});

/** A filling frame of `length` bytes as a receiver maps it (nothing in it yet): its release gives the segment back, telling `givenBack`. */
function mappedFilling(length: number, givenBack: () => void = () => undefined): { frame: Frame; progress: Int32Array } {
  const frame = Frame.own(new Uint8Array(progressOffset(length) + 4), givenBack);
  return { frame, progress: new Int32Array(frame.bytes.buffer, progressOffset(length), 1) };
}

test('filling - a word that says its sender failed is refused at once, not after the stall limit', (t) => {
  const view = mappedFilling(4096);
  Atomics.store(view.progress, 0, -1);
  // A drain that waited on the word would spin for the whole minute (and outlast the test's timeout).
  const started = performance.now();
  t.throws(() => drainNow(view, undefined, 60_000, 120_000), { instanceOf: FillingStalledError });
  t.true(performance.now() - started < 30_000, `refused after ${(performance.now() - started).toFixed(0)} ms`);
});

test('filling - a sink factory that throws gives the mapped segment back, on the responder\'s and the requester\'s side alike', async (t) => {
  const given: string[] = [];
  const view = (side: string) => mappedFilling(4096, () => given.push(side));
  const refuse = () => {
    throw new RangeError('no sink for that');
  };
  t.throws(() => drainNow(view('responder'), refuse, REQUEST_STALL_MS), { instanceOf: RangeError });
  await t.throwsAsync(drainSoon(view('requester'), refuse, REPLY_STALL_MS), { instanceOf: RangeError });
  t.deepEqual(given, ['responder', 'requester']);
});
