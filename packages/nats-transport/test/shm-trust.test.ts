import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { InboundMessage } from '@tensorbus/core';
import { acquireBuffer, releaseBuffer } from '@tensorbus/core/internal';
import { natsTransport } from '../src/index.js';
import type { NatsTransport } from '../src/internal.js';
import { hostId } from '../src/direct/direct-protocol.js';
import { sharedNatsServer } from '../src/testing/index.js';
import { answerPlusOne, isPlusOne, pattern } from './fixtures/shm-bytes.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}.js`, import.meta.url));
const FOUR_MB = 4 << 20;
const NOBODY = 65534;

interface Route {
  host: string;
  port: number;
  token: Buffer;
}

/** Runs a fixture with `args` and resolves with the first line it prints, parsed as JSON. */
async function firstLine<T>(t: ExecutionContext, name: string, args: string[], keep = true): Promise<T> {
  const child = spawn(process.execPath, [fixture(name), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  if (keep) t.teardown(() => child.kill('SIGKILL'));
  return new Promise<T>((resolve, reject) => {
    let text = '';
    child.stdout.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      if (text.includes('\n')) resolve(JSON.parse(text.slice(0, text.indexOf('\n'))) as T);
    });
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code} before it said anything`)));
  });
}

function routesOf(transport: NatsTransport): Map<string, Route> {
  return (transport as unknown as { direct: { routes: Map<string, Route> } }).direct.routes;
}

/** This process's cache of other processes' segments, by "pid:fd". */
function mappedSegments(transport: NatsTransport): Map<string, unknown> {
  return (transport as unknown as { direct: { caller: { segments: { mapped: Map<string, unknown> } } } }).direct.caller.segments.mapped;
}

async function transport(t: ExecutionContext, namespace: string): Promise<NatsTransport> {
  const created = (await natsTransport({ servers: (await sharedNatsServer()).url, namespace })) as NatsTransport;
  t.teardown(() => created.close());
  return created;
}

/** A request in pooled memory (a segment, as the codec would use), answered and checked. */
async function call(requester: NatsTransport, size: number, seed: number): Promise<boolean> {
  const request = pattern(acquireBuffer(size), seed);
  const sent = Uint8Array.from(request);
  const reply = await requester.request('svc', request, { timeoutMs: 30_000 });
  const ok = isPlusOne(reply, sent);
  releaseBuffer(reply);
  return ok;
}

test('shared memory - a reference to a third process\'s segment is refused unrun, as another user or the same, and honest callers keep shared memory', async (t) => {
  const namespace = `st${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const worker = await transport(t, namespace);
  const honest = await transport(t, namespace);
  let ran = 0;
  worker.subscribe('svc', (message: InboundMessage) => {
    ran++;
    answerPlusOne(message);
  }, { exclusive: true });
  await worker.flush();
  t.true(await call(honest, 100, 1), 'the first request goes through NATS and learns the route');
  t.true(await call(honest, FOUR_MB, 2));
  t.like(honest.directStats, { sharedRequests: 1 });
  const [[subject, route]] = [...routesOf(honest)];

  // A third process with a secret in a segment; intruders learnt the route token (as over an open server).
  const secret = await firstLine<{ pid: number; fd: number; size: number }>(t, 'shm-holder', []);
  const task = { host: route!.host, port: route!.port, token: route!.token.toString('hex'), subject: subject!, pid: secret.pid, fd: secret.fd, size: secret.size };
  const intruders = process.getuid?.() === 0 ? [NOBODY, undefined] : [undefined];
  if (intruders.length === 1) t.log('not root: the intruder runs as this user only');
  const ranBefore = ran;
  for (const uid of intruders) {
    const answer = await firstLine<{ uid: number; status: number; size: number }>(t, 'shm-intruder', [JSON.stringify({ ...task, uid })], false);
    t.is(answer.uid, uid ?? process.getuid!(), 'the intruder ran as the user asked');
    t.is(answer.status, 0x04, `refused with "cannot map" (intruder uid ${answer.uid})`);
    t.is(answer.size, 0, 'and nothing else came back');
  }
  t.is(ran, ranBefore, 'the worker never ran a request from a segment its peer did not own');
  t.false([...mappedSegments(worker).keys()].some((key) => key.startsWith(`${secret.pid}:`)), 'the third process\'s segment was never mapped');

  for (let i = 0; i < 3; i++) t.true(await call(honest, FOUR_MB, 10 + i), `honest call ${i}`);
  t.like(honest.directStats, { sharedRequests: 4, sharedReplies: 4 });
  t.is(ran, ranBefore + 3);
});

test('shared memory - a reply naming a third process\'s segment is refused: the call fails and nothing of that process is mapped', async (t) => {
  const namespace = `sl${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const requester = await transport(t, namespace);
  const secret = await firstLine<{ pid: number; fd: number; size: number }>(t, 'shm-holder', []);
  const port = await firstLine<number>(t, 'shm-liar', [JSON.stringify(secret)]);
  // A responder this process was told to use (as a reply with tb-route would), lying in its replies.
  routesOf(requester).set(`${namespace}.svc`, { hostId: hostId(), host: '127.0.0.1', port, token: Buffer.alloc(16) } as Route);
  const request = pattern(acquireBuffer(FOUR_MB), 3);
  const error = await t.throwsAsync(requester.request('svc', request, { timeoutMs: 10_000 }));
  t.is((error as { code?: string }).code, 'TRANSPORT', `failed with ${String(error)}`);
  t.false([...mappedSegments(requester).keys()].some((key) => key.startsWith(`${secret.pid}:`)), 'the third process\'s segment was never mapped');
  t.like(requester.directStats, { sharedRequests: 1, sharedReplies: 0 });
});
