import test, { type ExecutionContext } from 'ava';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Frame } from '@tensorbus/core';
import { DirectCaller } from '../src/direct/direct-caller.js';
import { hostId, parseOffer, type DirectOffer } from '../src/direct/direct-protocol.js';
import { DirectServer } from '../src/direct/direct-server.js';
import { listenUnixSocket, socketFolder, unixSocketFor, unixSocketPath } from '../src/direct/unix-socket.js';

/** A data port answering `ns.w1` with the request's bytes reversed, a caller, and the route its header names. */
async function echoPort(t: ExecutionContext, serverOptions: { unixSockets?: boolean } = {}, callerUnixSockets = true) {
  const server = await DirectServer.start(serverOptions);
  const served = server.route('ns.w1', (data, respond) => respond(Frame.of(Uint8Array.from(data.bytes).reverse())));
  const caller = new DirectCaller(undefined, undefined, undefined, undefined, undefined, callerUnixSockets);
  t.teardown(() => {
    caller.close();
    server.close();
  });
  const route = parseOffer(served.header)!;
  const call = async (bytes: number[]) => [...(await caller.call(route, 'ns.w1', Frame.of(Uint8Array.from(bytes)))).bytes];
  const connection = () => caller.connectionTo(route, caller.endpointOf(route));
  return { server, route, call, connection };
}

/** A process that listens on `path` and is killed by `signal` as soon as it does: it leaves its socket file behind. */
async function killedListener(path: string, signal: NodeJS.Signals): Promise<void> {
  const child = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, '${signal}'))`]);
  await new Promise((resolve) => child.once('exit', resolve));
}

/** A fresh folder of this user, mode 0700, removed after the test. */
function privateDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'tb-unix-'));
  chmodSync(dir, 0o700);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('unix socket - a data port of this host is reached through its Unix socket, which answers as the TCP port does, and is gone once the port closes', async (t) => {
  const { server, route, call, connection } = await echoPort(t);
  t.true(server.listensOnUnixSocket);
  const path = unixSocketPath(route.port)!;
  t.true(lstatSync(path).isSocket(), 'the socket is in this user\'s folder, named by host and port');
  t.is(lstatSync(socketFolder()).mode & 0o077, 0, 'a folder nobody else may enter');
  t.is(unixSocketFor(route), path);
  t.deepEqual(await call([1, 2, 3]), [3, 2, 1]);
  t.true(connection().viaUnixSocket, 'the call went through the socket, not TCP');
  const large = Array.from({ length: 300_000 }, (_, i) => i % 251);
  t.deepEqual(await call(large), [...large].reverse(), 'a request larger than a socket read arrives whole');
  // Bytes that are not the protocol end their connection, as on TCP; the port serves on.
  const { connect } = await import('node:net');
  const rogue = connect(path);
  await new Promise((resolve) => rogue.once('connect', resolve));
  rogue.write(Buffer.alloc(64, 0xff));
  await new Promise((resolve) => rogue.once('close', resolve));
  t.deepEqual(await call([8, 9]), [9, 8]);
  server.close();
  t.false(existsSync(path), 'closing the port removes its socket');
});

test('unix socket - unixSockets false on either side keeps the connection on TCP', async (t) => {
  const serverOff = await echoPort(t, { unixSockets: false });
  t.false(serverOff.server.listensOnUnixSocket);
  t.is(unixSocketFor(serverOff.route), undefined, 'no socket to find');
  t.deepEqual(await serverOff.call([4, 5]), [5, 4]);
  t.false(serverOff.connection().viaUnixSocket);

  const callerOff = await echoPort(t, {}, false);
  t.true(callerOff.server.listensOnUnixSocket);
  t.deepEqual(await callerOff.call([6, 7]), [7, 6]);
  t.false(callerOff.connection().viaUnixSocket, 'a caller told not to takes TCP though the socket is there');
});

test('unix socket - an offer of another host, network namespace or boot is never looked up, even where a socket of that port exists', async (t) => {
  const { route } = await echoPort(t);
  t.truthy(unixSocketFor(route));
  for (const other of ['elsewhere/boot/1', `${hostId()}x`, '']) {
    const offer: DirectOffer = { ...route, hostId: other };
    t.is(unixSocketFor(offer), undefined, `host id '${other}'`);
  }
});

test('unix socket - a folder others may enter, or a link to one, is not used to listen or to connect', async (t) => {
  const open = privateDir(t);
  chmodSync(open, 0o755);
  t.is(await listenUnixSocket(40_001, () => undefined, open), undefined, 'no listening in a folder others may enter');
  const mine = privateDir(t);
  const server = await listenUnixSocket(40_002, () => undefined, mine);
  t.truthy(server);
  t.teardown(() => server?.close());
  const offer: DirectOffer = { hostId: hostId(), host: '127.0.0.1', port: 40_002, token: Buffer.alloc(16) };
  t.is(unixSocketFor(offer, mine), unixSocketPath(40_002, mine));
  chmodSync(mine, 0o750);
  t.is(unixSocketFor(offer, mine), undefined, 'once others may enter the folder, its sockets are not connected to');
  chmodSync(mine, 0o700);

  const parent = privateDir(t);
  const link = join(parent, 'link');
  symlinkSync(mine, link);
  t.is(unixSocketFor(offer, link), undefined, 'a link to a private folder is not the folder');
  t.is(await listenUnixSocket(40_003, () => undefined, link), undefined);
});

test('unix socket - a socket file left by a killed process is replaced; a file that is not a socket is left alone and the port keeps TCP alone', async (t) => {
  const dir = privateDir(t);
  const stale = unixSocketPath(40_010, dir)!;
  await killedListener(stale, 'SIGKILL');
  t.true(lstatSync(stale).isSocket(), 'the killed listener left its socket');
  let connected = 0;
  const server = await listenUnixSocket(40_010, (socket) => {
    connected++;
    socket.destroy();
  }, dir);
  t.truthy(server, 'the port listens in its place');
  t.teardown(() => server?.close());
  const { connect } = await import('node:net');
  await new Promise<void>((resolve, reject) => connect(stale).once('connect', resolve).once('error', reject));
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.is(connected, 1, 'connections reach the new listener');

  const planted = unixSocketPath(40_011, dir)!;
  writeFileSync(planted, 'not a socket');
  t.is(await listenUnixSocket(40_011, () => undefined, dir), undefined);
  t.true(lstatSync(planted).isFile(), 'a file that is not a socket stays');
  t.is(unixSocketFor({ hostId: hostId(), host: '127.0.0.1', port: 40_011, token: Buffer.alloc(16) }, dir), undefined, 'and is not connected to');
});

test('unix socket - a path that would not fit a socket address is not used', (t) => {
  const deep = join(tmpdir(), 'x'.repeat(120));
  t.is(unixSocketPath(40_020, deep), undefined);
  mkdirSync(deep, { recursive: true, mode: 0o700 });
  t.teardown(() => rmSync(deep, { recursive: true, force: true }));
  t.is(unixSocketFor({ hostId: hostId(), host: '127.0.0.1', port: 40_020, token: Buffer.alloc(16) }, deep), undefined);
});

test('unix socket - a port that starts removes the sockets of its host that nothing listens on (processes killed by a signal), and keeps the live ones', async (t) => {
  const dir = privateDir(t);
  const dead = unixSocketPath(40_030, dir)!;
  await killedListener(dead, 'SIGTERM');
  t.true(lstatSync(dead).isSocket(), 'a process killed by a signal left its socket');
  const live = await listenUnixSocket(40_031, () => undefined, dir);
  t.teardown(() => live?.close());
  const other = join(dir, 'someone-else.sock');
  writeFileSync(other, '');
  const started = await listenUnixSocket(40_032, () => undefined, dir);
  t.teardown(() => started?.close());
  t.false(existsSync(dead), 'the dead socket is gone');
  t.true(lstatSync(unixSocketPath(40_031, dir)!).isSocket(), 'a socket something listens on stays');
  t.true(existsSync(other), 'a file not named as this host\'s sockets stays');
});

