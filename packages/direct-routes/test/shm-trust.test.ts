import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect as tcpConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InboundMessage } from '@tensorbus/core';
import { natsTransport } from '@tensorbus/nats-transport';
import type { NatsTransport } from '@tensorbus/nats-transport/internal';
import { hostId } from '../src/direct/direct-protocol.js';
import { provePeer, unixSocketPeer } from '../src/shm/socket-peer.js';
import { unixSocketPath } from '../src/direct/unix-socket.js';
import { sharedNatsServer } from '@tensorbus/nats-transport/testing';
import { answerPlusOne, callPlusOne, patternFrame } from '../src/testing/shm-bytes.js';

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}.js`, import.meta.url));
const FOUR_MB = 4 << 20;
const NOBODY = 65534;

interface Route {
  host: string;
  port: number;
  token: Buffer;
}

/** Fails `t` with what the intruder said when it got no reply at all (its connection closed, or an error). */
function replied(t: ExecutionContext, answer: object): void {
  if ('closed' in answer || 'error' in answer) t.fail(`the intruder got no reply: ${JSON.stringify(answer)}`);
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
    // 'close', not 'exit': a child that prints and exits at once may exit before its output is read here.
    child.once('close', (code) => reject(new Error(`${name} exited with ${code} before it said anything`)));
  });
}

function routesOf(transport: NatsTransport): Map<string, Route> {
  return (transport as unknown as { direct: { learnt: { bySubject: Map<string, Route> } } }).direct.learnt.bySubject;
}

/** This process's cache of other processes' segments, by "pid:fd". */
function mappedSegments(transport: NatsTransport): Map<string, unknown> {
  return (transport as unknown as { direct: { sharedMemory: { segments: { mapped: Map<string, unknown> } } } }).direct.sharedMemory.segments.mapped;
}

async function transport(t: ExecutionContext, namespace: string): Promise<NatsTransport> {
  const created = (await natsTransport({ servers: (await sharedNatsServer()).url, namespace })) as NatsTransport;
  t.teardown(() => created.close());
  return created;
}

const call = async (requester: NatsTransport, size: number, seed: number) => (await callPlusOne(requester, size, seed)).ok;

/**
 * A worker serving `svc` (answering plus one, counting what it ran) and an
 * honest caller whose first request went through NATS and learnt the route.
 */
async function servedWorker(t: ExecutionContext, tag: string) {
  const namespace = `${tag}${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const worker = await transport(t, namespace);
  const honest = await transport(t, namespace);
  const served = { ran: 0 };
  worker.subscribe('svc', (message: InboundMessage) => {
    served.ran++;
    answerPlusOne(message);
  }, { exclusive: true });
  await worker.flush();
  t.true(await call(honest, 100, 1), 'the first request goes through NATS and learns the route');
  return { worker, honest, served };
}

/**
 * Running an intruder as another user (nobody) needs root: without it, the
 * tests that do are skipped (and counted so), never passed on the same user's
 * run alone.
 */
const asRoot = process.getuid?.() === 0;
const rootTest = asRoot ? test : test.skip;
if (!asRoot) process.stderr.write('[shm-trust tests] not root: the tests of an intruder of another user are skipped\n');

/** An intruder that learnt a worker's route token names a third process's segment: it is refused unrun, and honest callers keep shared memory. */
async function thirdProcessSegment(t: ExecutionContext, uid: number | undefined, throughUnixSocket = false): Promise<void> {
  const { worker, honest, served } = await servedWorker(t, 'st');
  t.true(await call(honest, FOUR_MB, 2));
  t.like(honest.directStats, { sharedRequests: 1 });
  const [[subject, route]] = [...routesOf(honest)];

  // A third process with a secret in a segment; the intruder learnt the route token (as over an open server).
  const secret = await firstLine<{ pid: number; fd: number; size: number }>(t, 'shm-holder', []);
  const unixSocket = throughUnixSocket ? unixSocketPath(route!.port) : undefined;
  const task = { host: route!.host, port: route!.port, token: route!.token.toString('hex'), subject: subject!, pid: secret.pid, fd: secret.fd, size: secret.size, unixSocket };
  const ranBefore = served.ran;
  const answer = await firstLine<{ uid: number; status: number; size: number }>(t, 'shm-intruder', [JSON.stringify({ ...task, uid })], false);
  replied(t, answer);
  t.is(answer.uid, uid ?? process.getuid!(), 'the intruder ran as the user asked');
  t.is(answer.status, 0x04, `refused with "cannot map" (intruder uid ${answer.uid})`);
  t.is(answer.size, 0, 'and nothing else came back');
  t.is(served.ran, ranBefore, 'the worker never ran a request from a segment its peer did not own');
  t.false([...mappedSegments(worker).keys()].some((key) => key.startsWith(`${secret.pid}:`)), 'the third process\'s segment was never mapped');

  for (let i = 0; i < 3; i++) t.true(await call(honest, FOUR_MB, 10 + i), `honest call ${i}`);
  t.like(honest.directStats, { sharedRequests: 4, sharedReplies: 4 });
  t.is(served.ran, ranBefore + 3);
}

test('shared memory - a reference to a third process\'s segment from an intruder of the same user is refused unrun, and honest callers keep shared memory', (t) => thirdProcessSegment(t, undefined));

rootTest('shared memory - a reference to a third process\'s segment from an intruder of another user is refused unrun, and honest callers keep shared memory', (t) => thirdProcessSegment(t, NOBODY));

test('shared memory - a reference to a third process\'s segment from an intruder of the same user through the port\'s Unix socket is refused unrun, and honest callers keep shared memory', (t) => thirdProcessSegment(t, undefined, true));

test('shared memory - a reply naming a third process\'s segment is refused: the call fails and nothing of that process is mapped', async (t) => {
  const namespace = `sl${process.pid}x${Math.random().toString(36).slice(2, 8)}`;
  const requester = await transport(t, namespace);
  const secret = await firstLine<{ pid: number; fd: number; size: number }>(t, 'shm-holder', []);
  const port = await firstLine<number>(t, 'shm-liar', [JSON.stringify(secret)]);
  // A responder this process was told to use (as a reply with tb-route would), lying in its replies.
  routesOf(requester).set(`${namespace}.svc`, { hostId: hostId(), host: '127.0.0.1', port, token: Buffer.alloc(16) } as Route);
  const request = patternFrame(FOUR_MB, 3);
  const error = await t.throwsAsync(requester.request('svc', request, { timeoutMs: 10_000 }));
  t.is((error as { code?: string }).code, 'TRANSPORT', `failed with ${String(error)}`);
  t.false([...mappedSegments(requester).keys()].some((key) => key.startsWith(`${secret.pid}:`)), 'the third process\'s segment was never mapped');
  t.like(requester.directStats, { sharedRequests: 1, sharedReplies: 0 });
});

/** An intruder names `secretFile` by a path-only descriptor instead of a segment: refused, never read with the worker's rights. */
async function pathOnlyDescriptor(t: ExecutionContext, uid: number | undefined): Promise<void> {
  const { honest, served } = await servedWorker(t, 'sp');
  const [[subject, route]] = [...routesOf(honest)];
  const ranBefore = served.ran;
  // A file only its owner may read, in a directory anyone may pass through.
  const dir = mkdtempSync(join(tmpdir(), 'tb-secret-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  chmodSync(dir, 0o755);
  const secretFile = join(dir, 'secret');
  writeFileSync(secretFile, 'root only: the weights of the model', { mode: 0o600 });
  const task = { host: route!.host, port: route!.port, token: route!.token.toString('hex'), subject: subject!, pid: 0, fd: 0, size: 0, uid, pathOnly: secretFile };
  const answer = await firstLine<{ uid: number; status: number; size: number; body: string }>(t, 'shm-intruder', [JSON.stringify(task)], false);
  replied(t, answer);
  t.is(answer.uid, uid ?? process.getuid!());
  t.is(answer.status, 0x04, 'refused with "cannot map"');
  t.false(answer.body.includes('tppu!pomz'), 'nothing of the file came back (plus one per byte)');
  t.is(served.ran, ranBefore, 'the worker never ran it');
  t.true(await call(honest, FOUR_MB, 2), 'and goes on serving');
}

test('shared memory - a path-only descriptor of a file its holder may read is refused: it is no segment', (t) => pathOnlyDescriptor(t, undefined));

rootTest('shared memory - a path-only descriptor of a file its holder may not read (nobody naming a root-only file) is refused, never read with the worker\'s rights', (t) => pathOnlyDescriptor(t, NOBODY));

/** A loopback connection whose accepted end is handed to `use`; `client` makes the other end (this process, or a child). */
async function acceptedEnd(host: string, client: (port: number) => void): Promise<{ accepted: Socket; close: () => void }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  client((server.address() as { port: number }).port);
  const socket = await accepted;
  return { accepted: socket, close: () => (socket.destroy(), server.close()) };
}

test('shared memory - the peer of a Unix socket connection is the process the kernel says made its other end, while it runs, and no other', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tb-peer-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'p.sock');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(path, resolve));
  t.teardown(() => server.close());
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const child = spawn(process.execPath, ['-e', `require('net').connect(${JSON.stringify(path)}); setInterval(() => {}, 1000)`], { stdio: 'ignore' });
  t.teardown(() => child.kill('SIGKILL'));
  const socket = await accepted;
  const peer = unixSocketPeer(socket);
  t.like(peer, { pid: child.pid, uid: process.getuid!() }, 'the child made the other end');
  t.like(provePeer(socket, child.pid!, peer), { pid: child.pid });
  t.is(provePeer(socket, process.pid, peer), undefined, 'this process is not the peer of its own accepted socket');
  t.is(provePeer(socket, child.pid!, null), undefined, 'nothing read as it opened: nobody is shown');
  child.kill('SIGKILL');
  await new Promise((resolve) => child.once('exit', resolve));
  t.is(provePeer(socket, child.pid!, peer), undefined, 'once its maker is gone, its pid (which another process may get) is not');
  socket.destroy();
});

test('shared memory - the peer of a connection is the process holding its other end, over IPv4 and IPv6 loopback, and no other', async (t) => {
  for (const host of ['127.0.0.1', '::1']) {
    let mine: Socket | undefined;
    const own = await acceptedEnd(host, (port) => (mine = tcpConnect({ host, port })));
    await new Promise((resolve) => mine!.once('connect', resolve));
    t.like(provePeer(own.accepted, process.pid), { pid: process.pid, uid: process.getuid!() }, `${host}: this process holds the client end`);
    t.is(provePeer(own.accepted, process.ppid), undefined, `${host}: the parent does not`);
    mine!.destroy();
    own.close();

    // The other end in a child process: the child is the peer, this process is not (it holds only the accepted end).
    let child: ReturnType<typeof spawn> | undefined;
    const other = await acceptedEnd(host, (port) => {
      child = spawn(process.execPath, ['-e', `require('net').connect({ host: '${host}', port: ${port} }); setInterval(() => {}, 1000)`], { stdio: 'ignore' });
    });
    t.teardown(() => child!.kill('SIGKILL'));
    t.like(provePeer(other.accepted, child!.pid!), { pid: child!.pid }, `${host}: the child holds the client end`);
    t.is(provePeer(other.accepted, process.pid), undefined, `${host}: this process is not the peer of its own accepted socket`);
    child!.kill('SIGKILL');
    other.close();
  }
});
