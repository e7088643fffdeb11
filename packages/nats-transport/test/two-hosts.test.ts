import test from 'ava';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DirectStats } from '../src/index.js';
import { namespacesRefused, TwoHosts, type NsProcess } from '../src/testing/index.js';

/*
 * Workers on two "hosts": two network namespaces of this machine joined by a
 * veth pair, each with its own loopback, a NATS node in each. They share the
 * kernel, the boot id and the host name, which is what makes them a hard case
 * for "same host" detection.
 */

const WORKER = fileURLToPath(new URL('./fixtures/netns-worker.js', import.meta.url));
const LISTENER = fileURLToPath(new URL('./fixtures/port-listener.js', import.meta.url));
const FOUR_MB = 4 << 20;

interface Stats {
  stats: DirectStats;
  port: { address: string; port: number };
  status: string;
}

const made: TwoHosts[] = [];
test.after.always(() => {
  for (const hosts of made) hosts.remove();
});

function twoHosts(): TwoHosts {
  const hosts = new TwoHosts();
  made.push(hosts);
  return hosts;
}

async function worker(hosts: TwoHosts, i: 0 | 1, config: Record<string, unknown>): Promise<NsProcess> {
  const started = hosts.node(i, WORKER, [JSON.stringify(config)]);
  await started.next<{ ready?: string }>((line) => typeof line === 'object' && line !== null && 'ready' in line, 60_000);
  return started;
}

async function calls(from: NsProcess, subject: string, size: number, count: number): Promise<void> {
  const answer = await from.ask<{ ok?: boolean; error?: string }>({ op: 'call', subject, size, count }, 120_000);
  if (!answer.ok) throw new Error(`calls to ${subject} failed: ${JSON.stringify(answer)}`);
}

const stats = (of: NsProcess) => of.ask<Stats>({ op: 'stats' });

/** A throwaway CA and a server certificate for `ip`, made with openssl in `dir`. */
function certificates(dir: string, ip: string): { ca: string; cert: string; key: string } {
  const file = (name: string) => join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl('req', '-x509', ...ec, '-keyout', file('ca.key'), '-out', file('ca.pem'), '-days', '1', '-subj', '/CN=tensorbus test CA');
  openssl('req', ...ec, '-keyout', file('server.key'), '-out', file('server.csr'), '-subj', '/CN=tensorbus test server');
  // nats.js gives TLS no server name for an IP address, so Node checks the name "localhost".
  execFileSync('sh', ['-c', `printf 'subjectAltName=IP:${ip},DNS:localhost\\n' > '${file('san.ext')}'`]);
  openssl('x509', '-req', '-in', file('server.csr'), '-CA', file('ca.pem'), '-CAkey', file('ca.key'), '-CAcreateserial', '-out', file('server.pem'), '-days', '1', '-extfile', file('san.ext'));
  return { ca: file('ca.pem'), cert: file('server.pem'), key: file('server.key') };
}

const refused = namespacesRefused();
if (refused) process.stderr.write(`[two-hosts tests] skipped: ${refused}\n`);
const hostsTest = refused ? test.skip : test.serial;

hostsTest('two hosts - calls and large tensors between network namespaces go over direct TCP, never shared memory nor the other\'s loopback; a NATS node\'s loss fails over', async (t) => {
  const hosts = twoHosts();
  t.teardown(() => hosts.remove());
  const [hostA, hostB] = hosts.addresses;
  const node = (i: 0 | 1) => [
    `listen: ${hosts.addresses[i]}:4222`,
    `server_name: tb-host-${i}`,
    `cluster { name: tb-two-hosts, listen: ${hosts.addresses[i]}:6222, routes: [nats-route://${hosts.addresses[1 - i]}:6222] }`,
  ].join('\n');
  await hosts.natsServer(0, node(0));
  const nodeB = await hosts.natsServer(1, node(1), 1);
  const urlA = `nats://${hostA}:4222`;
  const urlB = `nats://${hostB}:4222`;
  const a = await worker(hosts, 0, { name: 'a', servers: [urlA, urlB], direct: { host: hostA } });
  const b = await worker(hosts, 1, { name: 'b', servers: [urlB, urlA], direct: { host: hostB } });
  // A worker of host B whose data port is B's loopback, and something listening on that very port of A's.
  const b2 = await worker(hosts, 1, { name: 'b2', servers: [urlB, urlA] });
  const b2Port = (await stats(b2)).port;
  t.is(b2Port.address, '127.0.0.1');
  const decoy = hosts.node(0, LISTENER, ['127.0.0.1', String(b2Port.port)]);
  await decoy.next<{ listening?: number }>((line) => typeof line === 'object' && line !== null && 'listening' in line);

  // Calls both ways, the first through NATS (it learns the route), then direct over the veth pair.
  await calls(a, 'svc.b', 100, 1);
  await calls(a, 'svc.b', FOUR_MB, 4);
  await calls(b, 'svc.a', 100, 1);
  await calls(b, 'svc.a', FOUR_MB, 3);
  // A large request on the bus: announced, and fetched from the sender's data port.
  await calls(a, 'bus.b', FOUR_MB, 2);
  const [sa, sb] = [(await stats(a)).stats, (await stats(b)).stats];
  t.true(sa.calls >= 4 && sb.calls >= 3, `direct calls: a ${sa.calls}, b ${sb.calls}`);
  t.true(sa.fetched >= 2 && sb.fetched >= 2, `fetched directly: a ${sa.fetched}, b ${sb.fetched}`);
  t.is(sa.sharedRequests + sa.sharedReplies + sb.sharedRequests + sb.sharedReplies, 0, 'no shared memory between namespaces');

  // B's loopback endpoint means nothing in A: calls to b2 go through NATS, never to A's port of that number.
  await calls(a, 'svc.b2', 100, 1);
  await calls(a, 'svc.b2', FOUR_MB, 3);
  t.is((await stats(a)).stats.calls, sa.calls, 'no direct call to another namespace\'s loopback');
  t.deepEqual(await decoy.ask({}), { connections: 0 }, 'nothing connected to A\'s port of that number');

  // Host B's NATS node goes: its workers fail over to A's node and everything still reaches everyone.
  // (What is published in the moment the connection dies is lost, as NATS is at most once: the
  // worker's requests fail, then succeed once it is on the other node.)
  nodeB.child.kill('SIGKILL');
  const lost = Date.now();
  let answered = false;
  while (!answered && Date.now() - lost < 20_000) {
    answered = (await b.ask<{ ok?: boolean }>({ op: 'call', subject: 'bus.a', size: 100, count: 1, timeoutMs: 1_000 })).ok === true;
  }
  t.true(answered, 'host B\'s worker reached host A\'s through the other node');
  t.log(`failed over in ${Date.now() - lost} ms`);
  await calls(b, 'bus.a', FOUR_MB, 2);
  await calls(a, 'bus.b', 100, 2);
  await calls(a, 'bus.b2', 100, 1);
  await calls(b, 'svc.a', FOUR_MB, 2);
  t.is((await stats(b)).status, 'connected');
  t.true((await stats(b)).stats.calls >= sb.calls + 2, 'the direct route outlived the NATS node');
});

hostsTest('two hosts - large payloads between hosts go striped over lanes, both ways, into the tensors they belong to, intact and leaving no tensors', async (t) => {
  const hosts = twoHosts();
  t.teardown(() => hosts.remove());
  const [hostA, hostB] = hosts.addresses;
  await hosts.natsServer(0, `listen: ${hostA}:4222`);
  const bus = { servers: [`nats://${hostA}:4222`] };
  const a = await worker(hosts, 0, { name: 'a', ...bus, direct: { host: hostA } });
  const b = await worker(hosts, 1, { name: 'b', ...bus, direct: { host: hostB } });
  // The first large reply from a port opens the lanes to it: b's requests are fetched by a (GET
  // replies striped from b's port), a's replies come to b striped from a's port.
  await calls(b, 'svc.a', FOUR_MB, 6);
  const tensors = await b.ask<{ ok?: boolean; tensors?: [number, number] }>({ op: 'tensors', subject: 'tensors.a', size: FOUR_MB, count: 6 }, 120_000);
  t.true(tensors.ok, `every tensor came back as sent: ${JSON.stringify(tensors)}`);
  t.is(tensors.tensors![1], tensors.tensors![0], 'no tensor left behind in the requester');
  const [sa, sb] = [(await stats(a)).stats, (await stats(b)).stats];
  t.log(`of 12 large calls, striped: replies ${sa.stripedSent} sent, ${sb.stripedReceived} received; requests ${sb.stripedSent} sent, ${sa.stripedReceived} received`);
  t.true(sa.stripedSent >= 4 && sb.stripedReceived >= 4, `replies striped a -> b: sent ${sa.stripedSent}, received ${sb.stripedReceived}`);
  t.true(sb.stripedSent >= 4 && sa.stripedReceived >= 4, `requests striped b -> a (fetched): sent ${sb.stripedSent}, received ${sa.stripedReceived}`);
  // Small ones are never striped.
  await calls(b, 'svc.a', 100, 3);
  t.is((await stats(a)).stats.stripedSent, sa.stripedSent);
});

hostsTest('two hosts - with TLS on NATS, calls and large tensors between hosts never cross a data port in clear; same-host calls stay direct', async (t) => {
  const hosts = twoHosts();
  t.teardown(() => hosts.remove());
  const [hostA] = hosts.addresses;
  const { ca, cert, key } = certificates(hosts.dir, hostA);
  await hosts.natsServer(0, `listen: ${hostA}:4222\ntls { cert_file: "${cert}", key_file: "${key}", timeout: 5 }`);
  const bus = { servers: [`tls://${hostA}:4222`], tls: { caFile: ca } };
  // Each asks for a data port every interface of its host can reach.
  const a = await worker(hosts, 0, { name: 'a', ...bus, direct: { host: '0.0.0.0', advertise: hostA } });
  const a2 = await worker(hosts, 0, { name: 'a2', ...bus, direct: { host: '0.0.0.0', advertise: hostA } });
  const b = await worker(hosts, 1, { name: 'b', ...bus, direct: { host: '0.0.0.0', advertise: hosts.addresses[1] } });

  for (const w of [a, a2, b]) t.is((await stats(w)).port.address, '127.0.0.1', 'the data port listens on loopback only');
  await calls(b, 'svc.a', 100, 1);
  await calls(b, 'svc.a', FOUR_MB, 3);
  await calls(b, 'bus.a', FOUR_MB, 2);
  await calls(a, 'svc.b', FOUR_MB, 2);
  const [sa, sb] = [(await stats(a)).stats, (await stats(b)).stats];
  t.like(sb, { calls: 0, fetched: 0, served: 0, answered: 0 }, 'b sent and took nothing beside the bus');
  t.like(sa, { calls: 0, fetched: 0, served: 0, answered: 0 }, 'a neither');

  // Within host A the plane stays: loopback and shared memory do not cross the network.
  await calls(a2, 'svc.a', 100, 1);
  await calls(a2, 'svc.a', FOUR_MB, 3);
  const s2 = (await stats(a2)).stats;
  t.true(s2.calls >= 3 && s2.sharedRequests >= 3, `same-host calls direct: ${JSON.stringify(s2)}`);
});
